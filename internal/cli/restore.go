package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
)

// newRestoreCommand is `hypershift restore cluster`: it reads and checks an
// archive, then creates the HostedCluster (marked for restore) and its
// NodePools; the operator restores the PKI, encryption key and etcd data.
func newRestoreCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "restore", Short: "Restore hosted clusters from backups"}
	var o restoreOptions
	cluster := &cobra.Command{
		Use:   "cluster --from URL --key-file FILE",
		Short: "Recreate a hosted cluster from an archive of `hypershift backup cluster` (same CAs, keys and objects)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	f := cluster.Flags()
	f.StringVar(&o.from, "from", "", "archive URL: file:///dir/name.bak, s3://, gs:// or azblob://bucket/key?… (required; this command and the operator read it)")
	f.StringVar(&o.keyFile, "key-file", "", "archive key the backup was made with")
	f.StringVar(&o.name, "name", "", "name of the restored HostedCluster (default: the archived one's)")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the restored HostedCluster (default: the archived one's)")
	f.BoolVar(&o.overwrite, "overwrite", false, "delete the existing HostedCluster --name in --namespace first (both required), and wait until it is gone")
	f.BoolVar(&o.wait, "wait", true, "wait until the restored cluster is Available")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "how long to wait for a deletion (--overwrite) and for Available")
	cmd.AddCommand(cluster, newRestoreEtcdDataCommand())
	return cmd
}

type restoreOptions struct {
	from, keyFile, name, namespace string
	overwrite, wait                bool
	timeout                        time.Duration
	// adjust, when set, changes the archived cluster before it is made
	// (a migration to the other runtime publishes it anew).
	adjust func(*hypershiftv1alpha1.HostedCluster)
}

func (o *restoreOptions) run(cmd *cobra.Command, g *globalOptions) error {
	ctx := cmd.Context()
	start := time.Now()
	if err := o.validate(); err != nil {
		return err
	}
	key, err := backup.LoadKey(o.keyFile)
	if err != nil {
		return err
	}
	// The archive is read, decrypted and checked before anything is made.
	creds, err := credentialsFromEnv(o.from)
	if err != nil {
		return err
	}
	a, err := backup.Fetch(ctx, o.from, key, creds)
	if err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	hc, pools, err := o.objects(a)
	if err != nil {
		return err
	}
	if o.adjust != nil {
		o.adjust(hc)
	}
	c, err := g.client()
	if err != nil {
		return err
	}
	nn := client.ObjectKeyFromObject(hc)
	if err := o.clear(ctx, cmd, c, nn); err != nil {
		return err
	}
	// Marked for restore before the dry run: admission judges the mark
	// too (the kube runtime refuses file:// archives).
	req, err := json.Marshal(hypershiftv1alpha1.RestoreRequest{URL: o.from, Secret: hc.Name + "-restore"}) //nolint:gosec // names the Secret, holds none of it
	if err != nil {
		return err
	}
	metav1.SetMetaDataAnnotation(&hc.ObjectMeta, hypershiftv1alpha1.RestoreFromAnnotation, string(req))
	objs := []client.Object{hc}
	for i := range pools {
		objs = append(objs, &pools[i])
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hc.Namespace}}
	if err := validateAll(ctx, c, ns, objs...); err != nil {
		return err
	}
	data, err := requestSecretData(o.from, key)
	if err != nil {
		return err
	}
	// The cluster first, marked for restore: the Secret it names is owned
	// by it and made right after; the operator waits for it.
	if err := c.Create(ctx, hc); err != nil {
		return fmt.Errorf("create hosted cluster %s: %w", nn, err)
	}
	if _, err := writeRequestSecret(ctx, c, hc, "restore", data); err != nil {
		return err
	}
	for i := range pools {
		if err := c.Create(ctx, &pools[i]); err != nil {
			return fmt.Errorf("create node pool %s/%s: %w", pools[i].Namespace, pools[i].Name, err)
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s restoring from %s (archive of %s made %s, %d node pools)\n",
		nn, o.from, a.Manifest.Cluster, a.Manifest.Created.Format(time.RFC3339), len(pools))
	if !o.wait {
		return nil
	}
	if err := waitAvailable(ctx, cmd, c, nn, o.timeout); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "restored hosted cluster %s in %.1fs\n", nn, time.Since(start).Seconds())
	return o.reportEndpoint(ctx, cmd, c, nn, a.Manifest.Endpoint)
}

// validate checks the flags before the archive is read.
func (o *restoreOptions) validate() error {
	if o.from == "" {
		return fmt.Errorf("--from is required: the archive URL `hypershift backup cluster --to` wrote")
	}
	if err := backup.CheckScheme(o.from); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	// Whoever made the archive chose the name and namespace in it: they
	// never choose what --overwrite deletes.
	if o.overwrite && (o.name == "" || o.namespace == "") {
		return errors.New("--overwrite deletes the hosted cluster it replaces: name it with --name and --namespace (the archive's own name is not used for a deletion)")
	}
	return nil
}

// reportEndpoint says when the restored cluster is reached elsewhere than
// the archived one (another host, or its port was taken): kubeconfigs saved
// before then need the new server address.
func (o *restoreOptions) reportEndpoint(ctx context.Context, cmd *cobra.Command, c client.Client, nn client.ObjectKey, archived string) error {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := c.Get(ctx, nn, hc); err != nil {
		return fmt.Errorf("read hosted cluster %s: %w", nn, err)
	}
	ep := hc.Status.ControlPlaneEndpoint
	now := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	if archived == "" || ep.Port == 0 || now == archived {
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "note: the API endpoint changed from %s to %s: kubeconfigs saved before the backup need the new server address (same CA and credentials); take it from Secret %s/%s-admin-kubeconfig\n",
		archived, now, nn.Namespace, nn.Name)
	return nil
}

// objects are the archive's HostedCluster and NodePools, renamed as the
// flags say.
func (o *restoreOptions) objects(a *backup.Archive) (*hypershiftv1alpha1.HostedCluster, []hypershiftv1alpha1.NodePool, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := json.Unmarshal(a.Files[backup.HostedClusterEntry], hc); err != nil {
		return nil, nil, fmt.Errorf("archive %s: %s: %w", o.from, backup.HostedClusterEntry, err)
	}
	var pools []hypershiftv1alpha1.NodePool
	if err := json.Unmarshal(a.Files[backup.NodePoolsEntry], &pools); err != nil {
		return nil, nil, fmt.Errorf("archive %s: %s: %w", o.from, backup.NodePoolsEntry, err)
	}
	oldName := hc.Name
	if o.name != "" {
		hc.Name = o.name
	}
	if o.namespace != "" {
		hc.Namespace = o.namespace
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
// existing cluster, or with --overwrite deletes it and waits until it is
// gone.
func (o *restoreOptions) clear(ctx context.Context, cmd *cobra.Command, c client.Client, nn client.ObjectKey) error {
	if o.name == "" || o.namespace == "" {
		fmt.Fprintf(cmd.OutOrStdout(), "restoring as hosted cluster %s, as the archive names it (--name and --namespace choose another)\n", nn)
	}
	existing := &hypershiftv1alpha1.HostedCluster{}
	err := c.Get(ctx, nn, existing)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read hosted cluster %s: %w", nn, err)
	case !o.overwrite:
		return fmt.Errorf("hosted cluster %s exists: restore under another --name/--namespace, or pass --overwrite to delete it first", nn)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "deleting hosted cluster %s (--overwrite)\n", nn)
	if err := c.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete hosted cluster %s: %w", nn, err)
	}
	err = wait.PollUntilContextTimeout(ctx, pollInterval, o.timeout, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, nn, &hypershiftv1alpha1.HostedCluster{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		return fmt.Errorf("hosted cluster %s still there after %s: see `hypershift describe cluster %s -n %s`", nn, o.timeout, nn.Name, nn.Namespace)
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
