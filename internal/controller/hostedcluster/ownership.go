package hostedcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/hostedref"
)

// ClusterUIDLabel holds the UID of the HostedCluster that created a
// control-plane namespace or Secret. NS-NAME is ambiguous (a/b-c and a-b/c
// both give a-b-c), so the name labels alone cannot say whose it is; the UID
// can, and it is set only by this controller when it creates the object.
const ClusterUIDLabel = hostedref.ClusterUIDLabel

// A control-plane namespace enforces the restricted Pod Security Standard:
// the control plane's pods meet it, and so must the pods of addons put
// beside it.
const (
	podSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	podSecurityRestricted   = "restricted"
)

// conflictRequeue is how often a refused cluster looks again: the other
// owner's namespace may be gone by then.
const conflictRequeue = 30 * time.Second

// ownership is how an object's labels relate to the scope's HostedCluster.
type ownership int

const (
	// owned: the object carries this HostedCluster's UID.
	owned ownership = iota
	// legacy: made before UID labels, labelled with exactly this cluster's
	// namespace and name and with no UID. It is adopted (the upgrade path).
	legacy
	// foreign: anything else, including objects without our labels.
	foreign
)

func (s *scope) ownership(labels map[string]string) ownership {
	uid := labels[ClusterUIDLabel]
	switch {
	case uid != "" && uid == string(s.hc.UID):
		return owned
	case uid == "" && labels[ClusterNameLabel] == s.hc.Name && labels[ClusterNamespaceLabel] == s.hc.Namespace:
		return legacy
	default:
		return foreign
	}
}

// notOwnedError refuses an object in the control-plane namespace that is
// not this cluster's; the cluster reports it as a conflict.
type notOwnedError struct{ msg string }

func (e *notOwnedError) Error() string { return e.msg }

// verifyOwner refuses an object that is not this cluster's; pki.SecretStore
// calls it for every Secret it reads, so a key pair someone else left in
// the namespace is never used as this cluster's.
func (s *scope) verifyOwner(kind, name string, labels map[string]string) error {
	if s.ownership(labels) != foreign {
		return nil
	}
	return &notOwnedError{fmt.Sprintf("%s %s/%s belongs to %s, not to HostedCluster %s/%s (UID %s): refusing to use it; "+
		"delete that %s if it is stale (this cluster then makes its own), or delete this HostedCluster",
		kind, s.ns, name, describeOwner(labels), s.hc.Namespace, s.hc.Name, s.hc.UID, kind)}
}

// describeOwner names who an object's labels say it belongs to.
func describeOwner(labels map[string]string) string {
	uid, ns, name := labels[ClusterUIDLabel], labels[ClusterNamespaceLabel], labels[ClusterNameLabel]
	switch {
	case ns != "" && name != "" && uid != "":
		return fmt.Sprintf("HostedCluster %s/%s (UID %s)", ns, name, uid)
	case ns != "" && name != "":
		return fmt.Sprintf("HostedCluster %s/%s (created before %s labels)", ns, name, ClusterUIDLabel)
	case uid != "":
		return fmt.Sprintf("another HostedCluster (UID %s)", uid)
	default:
		return fmt.Sprintf("no HostedCluster (it was not created by hypershift: no %s label)", ClusterUIDLabel)
	}
}

// conflictMessage says whose the namespace is and what to do about it.
func (s *scope) conflictMessage(ns *corev1.Namespace) string {
	fix := "delete this HostedCluster and create it with a namespace and name whose NAMESPACE-NAME is free"
	if ns.Labels[ClusterUIDLabel] == "" && ns.Labels[ClusterNameLabel] == "" {
		fix = "delete or rename namespace " + ns.Name + ", or " + fix
	}
	return fmt.Sprintf("control-plane namespace %s belongs to %s; HostedCluster %s/%s maps to the same NAMESPACE-NAME and is refused, nothing is created for it: %s",
		ns.Name, describeOwner(ns.Labels), s.hc.Namespace, s.hc.Name, fix)
}

// reconcileNamespace creates the control-plane namespace labelled with the
// cluster's UID and the restricted Pod Security Standard, or accepts it
// when it carries that UID (labelling it so when it lacks either). A namespace of
// another owner is refused: s.conflict says why and no later phase runs.
func (r *Reconciler) reconcileNamespace(ctx context.Context, s *scope) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.ns}, ns)
	if apierrors.IsNotFound(err) {
		labels := s.labels()
		labels[podSecurityEnforceLabel] = podSecurityRestricted
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns, Labels: labels}}
		if err := r.Client.Create(ctx, ns); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// Someone made it meanwhile: look at whose it is next time.
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			return ctrl.Result{}, fmt.Errorf("create control-plane namespace %s: %w", s.ns, err)
		}
		s.nsOwned = true
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("get control-plane namespace %s: %w", s.ns, err)
	}
	if !ns.DeletionTimestamp.IsZero() {
		// Whoever had it (often a previous cluster of the same name) is
		// removing it; the name is free once it is gone.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	switch s.ownership(ns.Labels) {
	case foreign:
		s.conflict = s.conflictMessage(ns)
		ctrl.LoggerFrom(ctx).Info("control-plane namespace conflict", "namespace", s.ns, "owner", describeOwner(ns.Labels))
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	case legacy, owned:
		if ns.Labels[ClusterUIDLabel] == string(s.hc.UID) && ns.Labels[podSecurityEnforceLabel] == podSecurityRestricted {
			break
		}
		// The optimistic lock makes the labels we checked the labels we
		// stamp; a namespace made before these labels gets them now.
		patch := client.MergeFromWithOptions(ns.DeepCopy(), client.MergeFromWithOptimisticLock{})
		ns.Labels[ClusterUIDLabel] = string(s.hc.UID)
		ns.Labels[podSecurityEnforceLabel] = podSecurityRestricted
		if err := r.Client.Patch(ctx, ns, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("label control-plane namespace %s: %w", s.ns, err)
		}
		ctrl.LoggerFrom(ctx).Info("labelled control-plane namespace made before its labels", "namespace", s.ns)
	}
	s.nsOwned = true
	return ctrl.Result{}, nil
}

// liveReader reads from the API server, not the cache (APIReader).
func (r *Reconciler) liveReader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// ownedNamespace returns the control-plane namespace when this cluster owns
// it (or adopts it, see ownership), nil when it is absent or foreign. It
// reads past the cache: a namespace created by a pass just before the
// cluster's deletion may not be in the cache yet, and a cluster that finds
// none removes its finalizer, leaving the namespace and its data behind.
func (r *Reconciler) ownedNamespace(ctx context.Context, s *scope) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	err := r.liveReader().Get(ctx, client.ObjectKey{Name: s.ns}, ns)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get control-plane namespace %s: %w", s.ns, err)
	case s.ownership(ns.Labels) == foreign:
		ctrl.LoggerFrom(ctx).Info("leaving control-plane namespace alone: it is not this cluster's",
			"namespace", s.ns, "owner", describeOwner(ns.Labels))
		return nil, nil
	}
	return ns, nil
}
