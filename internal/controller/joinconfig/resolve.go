package joinconfig

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/bootstrap"
)

// invalidError: the config cannot be made as it is; another object or an
// edit can make it valid.
type invalidError struct{ msg string }

func (e invalidError) Error() string { return e.msg }

func invalid(format string, args ...any) error { return invalidError{fmt.Sprintf(format, args...)} }

// target is what a config's machine joins.
type target struct {
	cluster string // the Cluster API Cluster's name
	hc      *hypershiftv1alpha1.HostedCluster
	np      *hypershiftv1alpha1.NodePool
	version string
}

// resolve finds what the config's machine joins, through objects the
// operator and Cluster API write in the control-plane namespace: the
// Cluster its label names, whose control plane must be this namespace's
// HostedControlPlane, the HostedCluster that owns that (checked by UID,
// hostedref.Owner), and the NodePool of that cluster the config names.
// wait says what the config waits for (the control plane is not
// initialized yet).
func (r *Reconciler) resolve(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig) (t target, wait string, err error) {
	t.cluster = jc.Labels[ClusterNameLabel]
	if t.cluster == "" {
		return t, "", invalid("JoinConfig has no %s label: Cluster API sets it on the configs it clones for a Machine", ClusterNameLabel)
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(clusterGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: jc.Namespace, Name: t.cluster}, cl); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return t, "", invalid("Cluster %s/%s: %v", jc.Namespace, t.cluster, err)
		}
		return t, "", err
	}
	group, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "apiGroup")
	kind, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "kind")
	name, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
	if group != hypershiftv1alpha1.GroupVersion.Group || kind != "HostedControlPlane" || name == "" {
		return t, "", invalid("Cluster %s's control plane is %s %s/%s, not a HostedControlPlane", t.cluster, kind, group, name)
	}
	if ok, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "controlPlaneInitialized"); !ok {
		return t, fmt.Sprintf("Cluster %s's control plane is not initialized yet", t.cluster), nil
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: jc.Namespace, Name: name}, hcp); err != nil {
		if apierrors.IsNotFound(err) {
			return t, "", invalid("HostedControlPlane %s/%s: %v", jc.Namespace, name, err)
		}
		return t, "", err
	}
	if t.hc, err = hostedref.Owner(ctx, r.Client, hcp); err != nil {
		return t, "", invalid("%v", err)
	}
	t.np = &hypershiftv1alpha1.NodePool{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: t.hc.Namespace, Name: jc.Spec.NodePool}, t.np); err != nil {
		if apierrors.IsNotFound(err) {
			return t, "", invalid("spec.nodePool: NodePool %s/%s does not exist", t.hc.Namespace, jc.Spec.NodePool)
		}
		return t, "", err
	}
	if t.np.Spec.ClusterName != t.hc.Name {
		return t, "", invalid("spec.nodePool: NodePool %s/%s is a pool of cluster %s, not %s", t.hc.Namespace, t.np.Name, t.np.Spec.ClusterName, t.hc.Name)
	}
	t.version, err = r.machineVersion(ctx, jc)
	if err != nil {
		return t, "", err
	}
	if t.version == "" {
		t.version = t.np.JoinVersion(t.hc)
	}
	return t, "", nil
}

// machineVersion is the Kubernetes version of the Machine the config is
// for (Cluster API moves it in a rolling upgrade); empty when the config
// has no Machine or the Machine says none.
func (r *Reconciler) machineVersion(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig) (string, error) {
	ref := metav1.GetControllerOf(jc)
	if ref == nil || ref.Kind != machineGVK.Kind {
		return "", nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != clusterAPIGroup {
		return "", nil //nolint:nilerr // not Cluster API's Machine: no version from it
	}
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(machineGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: jc.Namespace, Name: ref.Name}, m); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if string(m.GetUID()) != string(ref.UID) {
		return "", nil
	}
	v, _, _ := unstructured.NestedString(m.Object, "spec", "version")
	return v, nil
}

// issue issues the machine's single-use token in the hosted cluster and
// returns the userdata that joins with it.
func (r *Reconciler) issue(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig, t target) ([]byte, error) {
	kc, _, err := hostedref.AdminKubeconfig(ctx, r.Client, t.hc)
	if err != nil {
		return nil, err
	}
	network, err := bootstrap.NetworkOf(t.hc.Spec.Networking)
	if err != nil {
		return nil, err
	}
	ttl := defaultTokenTTL
	if jc.Spec.TokenTTL != nil {
		ttl = jc.Spec.TokenTTL.Duration
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	key := client.ObjectKeyFromObject(t.hc)
	j, err := bootstrap.IssueJoin(ctx, kc, key.String(), network, bootstrap.TokenRequest{Pool: t.np.Name, Now: now, TTL: ttl, SingleUse: true})
	if err != nil {
		return nil, fmt.Errorf("issue a bootstrap token of NodePool %s/%s: %w", t.hc.Namespace, t.np.Name, err)
	}
	return bootstrap.Userdata(j, t.version)
}
