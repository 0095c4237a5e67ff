package joinconfig

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/capiref"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/release"
)

// invalidError: the config cannot be made as it is; another object or an
// edit can make it valid.
type invalidError struct{ msg string }

func (e invalidError) Error() string { return e.msg }

func invalid(format string, args ...any) error { return invalidError{fmt.Sprintf(format, args...)} }

// waiting is what a config waits for before anything is issued.
type waiting struct {
	reason hypershiftv1alpha1.ConditionReason
	msg    string
}

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
// wait says what the config waits for: a Machine to own it, the control
// plane to be initialized.
func (r *Reconciler) resolve(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig) (t target, wait *waiting, err error) {
	t.cluster = jc.Labels[ClusterNameLabel]
	if t.cluster == "" {
		return t, nil, invalid("JoinConfig has no %s label: Cluster API sets it on the configs it clones for a Machine", ClusterNameLabel)
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capiref.ClusterGVK)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: jc.Namespace, Name: t.cluster}, cl); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return t, nil, invalid("Cluster %s/%s: %v", jc.Namespace, t.cluster, err)
		}
		return t, nil, err
	}
	group, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "apiGroup")
	kind, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "kind")
	name, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
	if group != hypershiftv1alpha1.GroupVersion.Group || kind != "HostedControlPlane" || name == "" {
		return t, nil, invalid("Cluster %s's control plane is %s %s/%s, not a HostedControlPlane", t.cluster, kind, group, name)
	}
	machine, err := capiref.OwningMachine(ctx, r.Client, jc)
	if err != nil {
		return t, nil, err
	}
	if machine == nil {
		return t, &waiting{hypershiftv1alpha1.WaitingForMachineReason, "Waiting for a Machine to own it (Cluster API makes it the controller of the config it cloned)"}, nil
	}
	if name, _, _ := unstructured.NestedString(machine.Object, "spec", "clusterName"); name != t.cluster {
		return t, nil, invalid("Machine %s is of Cluster %q, the JoinConfig of Cluster %q", machine.GetName(), name, t.cluster)
	}
	t.version, _, _ = unstructured.NestedString(machine.Object, "spec", "version")
	if ok, _, _ := unstructured.NestedBool(cl.Object, "status", "initialization", "controlPlaneInitialized"); !ok {
		return t, &waiting{hypershiftv1alpha1.WaitingForControlPlaneReason, fmt.Sprintf("Cluster %s's control plane is not initialized yet", t.cluster)}, nil
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: jc.Namespace, Name: name}, hcp); err != nil {
		if apierrors.IsNotFound(err) {
			return t, nil, invalid("HostedControlPlane %s/%s: %v", jc.Namespace, name, err)
		}
		return t, nil, err
	}
	if t.hc, err = hostedref.Owner(ctx, r.Client, hcp); err != nil {
		return t, nil, invalid("%v", err)
	}
	t.np = &hypershiftv1alpha1.NodePool{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: t.hc.Namespace, Name: jc.Spec.NodePool}, t.np); err != nil {
		if apierrors.IsNotFound(err) {
			return t, nil, invalid("spec.nodePool: NodePool %s/%s does not exist", t.hc.Namespace, jc.Spec.NodePool)
		}
		return t, nil, err
	}
	if t.np.Spec.ClusterName != t.hc.Name {
		return t, nil, invalid("spec.nodePool: NodePool %s/%s is a pool of cluster %s, not %s", t.hc.Namespace, t.np.Name, t.np.Spec.ClusterName, t.hc.Name)
	}
	if t.version == "" {
		t.version = t.np.JoinVersion(t.hc)
	}
	if _, ok := release.Minor(t.version); !ok {
		return t, nil, invalid("Kubernetes version %q (the Machine's spec.version, or else the NodePool's) is not MAJOR.MINOR.PATCH", t.version)
	}
	return t, nil, nil
}

// issueTimeout bounds the requests to the hosted cluster that issue a
// token: a hosted API server that does not answer holds no worker.
const issueTimeout = 30 * time.Second

// issue issues the machine's single-use token in the hosted cluster and
// returns the userdata that joins with it, and the token, to revoke when
// the userdata cannot be handed out. What the userdata would refuse is
// refused before the token is issued.
func (r *Reconciler) issue(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig, t target) ([]byte, bootstrap.Token, []byte, error) {
	kc, _, err := hostedref.AdminKubeconfig(ctx, r.Client, t.hc)
	if err != nil {
		return nil, bootstrap.Token{}, nil, err
	}
	server, _, err := bootstrap.Endpoint(kc)
	if err != nil {
		return nil, bootstrap.Token{}, nil, err
	}
	if err := bootstrap.CheckUserdata(server, t.version); err != nil {
		return nil, bootstrap.Token{}, nil, invalid("%v", err)
	}
	network, err := bootstrap.NetworkOf(t.hc.Spec.Networking)
	if err != nil {
		return nil, bootstrap.Token{}, nil, invalid("HostedCluster %s/%s: %v", t.hc.Namespace, t.hc.Name, err)
	}
	ttl := defaultTokenTTL
	if jc.Spec.TokenTTL != nil {
		ttl = jc.Spec.TokenTTL.Duration
	}
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	ctx, cancel := context.WithTimeout(ctx, issueTimeout)
	defer cancel()
	key := client.ObjectKeyFromObject(t.hc)
	j, err := bootstrap.IssueJoin(ctx, kc, key.String(), network, bootstrap.TokenRequest{Pool: t.np.Name, Now: now, TTL: ttl, SingleUse: true})
	if err != nil {
		return nil, bootstrap.Token{}, nil, fmt.Errorf("issue a bootstrap token of NodePool %s/%s: %w", t.hc.Namespace, t.np.Name, err)
	}
	userdata, err := bootstrap.Userdata(j, t.version, t.np.Spec.Platform.Type)
	return userdata, j.Token, kc, err
}
