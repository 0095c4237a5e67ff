package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

// RestoreOptions say how a hosted cluster is recreated from an archive.
type RestoreOptions struct {
	// From is the archive's URL; Key its key.
	From string
	Key  []byte
	// Name and Namespace of the restored cluster; empty: the archived
	// one's.
	Name, Namespace string
	// Overwrite deletes the existing cluster Name in Namespace (both
	// required) first, and waits until it is gone.
	Overwrite bool
	// Wait waits until the restored cluster is Available.
	Wait bool
	// Timeout bounds a deletion (Overwrite) and the wait for Available.
	Timeout time.Duration
	// Adjust, when set, changes the archived cluster before it is made
	// (a migration to the other runtime publishes it anew).
	Adjust func(*hypershiftv1alpha1.HostedCluster)
}

// Validate checks the options before the archive is read; its errors name
// the flags of `hypershift restore cluster`.
func (o RestoreOptions) Validate() error {
	if o.From == "" {
		return fmt.Errorf("--from is required: the archive URL `hypershift backup cluster --to` wrote")
	}
	if err := CheckScheme(o.From); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	// Whoever made the archive chose the name and namespace in it: they
	// never choose what --overwrite deletes.
	if o.Overwrite && (o.Name == "" || o.Namespace == "") {
		return errors.New("--overwrite deletes the hosted cluster it replaces: name it with --name and --namespace (the archive's own name is not used for a deletion)")
	}
	return nil
}

// ClusterArchive is an archive read, decrypted and checked, and the
// HostedCluster and NodePools it restores, renamed as the options say.
type ClusterArchive struct {
	*Archive
	Cluster *hypershiftv1alpha1.HostedCluster
	Pools   []hypershiftv1alpha1.NodePool
}

// ReadCluster reads the archive of o.From (with the credentials of its
// scheme from this process's environment) and the objects it restores;
// nothing is made yet.
func ReadCluster(ctx context.Context, o RestoreOptions) (*ClusterArchive, error) {
	creds, err := CredentialsForURL(o.From)
	if err != nil {
		return nil, err
	}
	a, err := Fetch(ctx, o.From, o.Key, creds)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	hc, pools, err := o.objects(a)
	if err != nil {
		return nil, err
	}
	if o.Adjust != nil {
		o.Adjust(hc)
	}
	return &ClusterArchive{Archive: a, Cluster: hc, Pools: pools}, nil
}

// RestoreCluster creates the archive's HostedCluster, marked for restore,
// the request Secret it names and its NodePools; the operator restores the
// PKI, encryption key and etcd data. Each step is said on out, retried
// reads on errOut. With o.Wait it waits until the cluster is Available.
func RestoreCluster(ctx context.Context, out, errOut io.Writer, c client.Client, a *ClusterArchive, o RestoreOptions) error {
	start := time.Now()
	hc, pools := a.Cluster, a.Pools
	nn := client.ObjectKeyFromObject(hc)
	if err := o.clear(ctx, out, c, nn); err != nil {
		return err
	}
	// Marked for restore before the dry run: admission judges the mark
	// too (the kube runtime refuses file:// archives).
	req, err := json.Marshal(hypershiftv1alpha1.RestoreRequest{URL: o.From, Secret: hc.Name + "-restore"}) //nolint:gosec // names the Secret, holds none of it
	if err != nil {
		return err
	}
	metav1.SetMetaDataAnnotation(&hc.ObjectMeta, hypershiftv1alpha1.RestoreFromAnnotation, string(req))
	objs := []client.Object{hc}
	for i := range pools {
		objs = append(objs, &pools[i])
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hc.Namespace}}
	if err := clusterclient.ValidateAll(ctx, c, ns, objs...); err != nil {
		return err
	}
	data, err := RequestSecretData(o.From, o.Key)
	if err != nil {
		return err
	}
	// The cluster first, marked for restore: the Secret it names is owned
	// by it and made right after; the operator waits for it.
	if err := c.Create(ctx, hc); err != nil {
		return fmt.Errorf("create hosted cluster %s: %w", nn, err)
	}
	if _, err := WriteRequestSecret(ctx, c, hc, "restore", data); err != nil {
		return err
	}
	for i := range pools {
		if err := c.Create(ctx, &pools[i]); err != nil {
			return fmt.Errorf("create node pool %s/%s: %w", pools[i].Namespace, pools[i].Name, err)
		}
	}
	fmt.Fprintf(out, "hosted cluster %s restoring from %s (archive of %s made %s, %d node pools)\n",
		nn, o.From, a.Manifest.Cluster, a.Manifest.Created.Format(time.RFC3339), len(pools))
	if !o.Wait {
		return nil
	}
	if err := clusterclient.WaitAvailable(ctx, out, errOut, c, nn, o.Timeout); err != nil {
		return err
	}
	fmt.Fprintf(out, "restored hosted cluster %s in %.1fs\n", nn, time.Since(start).Seconds())
	return ReportEndpoint(ctx, out, c, nn, a.Manifest.Endpoint)
}

// ReportEndpoint says on out when the restored cluster is reached elsewhere
// than the archived one (another host, or its port was taken): kubeconfigs
// saved before then need the new server address.
func ReportEndpoint(ctx context.Context, out io.Writer, c client.Client, nn client.ObjectKey, archived string) error {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := c.Get(ctx, nn, hc); err != nil {
		return fmt.Errorf("read hosted cluster %s: %w", nn, err)
	}
	ep := hc.Status.ControlPlaneEndpoint
	now := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	if archived == "" || ep.Port == 0 || now == archived {
		return nil
	}
	fmt.Fprintf(out, "note: the API endpoint changed from %s to %s: kubeconfigs saved before the backup need the new server address (same CA and credentials); take it from Secret %s/%s-admin-kubeconfig\n",
		archived, now, nn.Namespace, nn.Name)
	return nil
}

// objects are the archive's HostedCluster and NodePools, renamed as the
// options say.
func (o RestoreOptions) objects(a *Archive) (*hypershiftv1alpha1.HostedCluster, []hypershiftv1alpha1.NodePool, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := json.Unmarshal(a.Files[HostedClusterEntry], hc); err != nil {
		return nil, nil, fmt.Errorf("archive %s: %s: %w", o.From, HostedClusterEntry, err)
	}
	var pools []hypershiftv1alpha1.NodePool
	if err := json.Unmarshal(a.Files[NodePoolsEntry], &pools); err != nil {
		return nil, nil, fmt.Errorf("archive %s: %s: %w", o.From, NodePoolsEntry, err)
	}
	oldName := hc.Name
	if o.Name != "" {
		hc.Name = o.Name
	}
	if o.Namespace != "" {
		hc.Namespace = o.Namespace
	}
	hc.ResourceVersion, hc.UID = "", ""
	// A fence belongs to the plane it was set on (a migration fences its
	// source before the final backup); the restored cluster runs.
	delete(hc.Annotations, hypershiftv1alpha1.FencedAnnotation)
	for i := range pools {
		pools[i].Namespace = hc.Namespace
		pools[i].Spec.ClusterName = hc.Name
		pools[i].Name = restoredPoolName(pools[i].Name, oldName, hc.Name)
	}
	return hc, pools, nil
}

// clear says when the target's name comes from the archive, and refuses an
// existing cluster, or with Overwrite deletes it and waits until it is
// gone.
func (o RestoreOptions) clear(ctx context.Context, out io.Writer, c client.Client, nn client.ObjectKey) error {
	if o.Name == "" || o.Namespace == "" {
		fmt.Fprintf(out, "restoring as hosted cluster %s, as the archive names it (--name and --namespace choose another)\n", nn)
	}
	existing := &hypershiftv1alpha1.HostedCluster{}
	err := c.Get(ctx, nn, existing)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read hosted cluster %s: %w", nn, err)
	case !o.Overwrite:
		return fmt.Errorf("hosted cluster %s exists: restore under another --name/--namespace, or pass --overwrite to delete it first", nn)
	}
	fmt.Fprintf(out, "deleting hosted cluster %s (--overwrite)\n", nn)
	if err := c.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete hosted cluster %s: %w", nn, err)
	}
	err = wait.PollUntilContextTimeout(ctx, clusterclient.PollInterval, o.Timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, nn, &hypershiftv1alpha1.HostedCluster{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("hosted cluster %s still there after %s: see `hypershift describe cluster %s -n %s`", nn, o.Timeout, nn.Name, nn.Namespace)
	}
	return nil
}

// restoredPoolName names a NodePool of a cluster restored under another
// name, so it does not clash with the original's pools in the same
// namespace: the cluster's name in the pool's name follows (a → b, a-x →
// b-x), other pools get the new name as a prefix.
func restoredPoolName(pool, oldCluster, newCluster string) string {
	switch {
	case oldCluster == newCluster:
		return pool
	case pool == oldCluster:
		return newCluster
	case strings.HasPrefix(pool, oldCluster+"-"):
		return newCluster + strings.TrimPrefix(pool, oldCluster)
	}
	return newCluster + "-" + pool
}
