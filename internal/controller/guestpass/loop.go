package guestpass

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
)

// finalizeRetry is how soon an unfinished Finalize runs again.
const finalizeRetry = 5 * time.Second

// Loop runs a controller's passes over the hosted clusters it applies
// to: one when a HostedCluster's spec changes and one every Interval
// while it applies, each once the cluster's control plane is Available
// and the hosted cluster answers. It does not watch the hosted cluster,
// whose objects a pass reads in bounded pages.
type Loop struct {
	// Name is the controller's.
	Name string
	// Client reads HostedClusters and HostedControlPlanes (cached).
	Client client.Client
	Guests Guests
	// Interval between passes.
	Interval time.Duration
	// Applies says whether the controller acts on a HostedCluster that is
	// not being deleted; for one it does not, the connection is dropped.
	Applies func(*hypershiftv1alpha1.HostedCluster) bool
	// Pass runs one pass; its error is logged, and the next pass comes
	// after Interval all the same.
	Pass func(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kube kubernetes.Interface) error
	// Finalize, when set, runs for a HostedCluster being deleted until it
	// says it is done: what a pass made outside the cluster's
	// control-plane namespace does not go with it.
	Finalize func(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (bool, error)
}

// SetupWithManager registers the loop as a controller of HostedClusters.
func (l *Loop) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(l.Name).
		// A pass every Interval; the cluster's status changes bring none.
		For(&hypershiftv1alpha1.HostedCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(l)
}

// Reconcile runs one pass for a HostedCluster and comes back after
// Interval while the loop applies to it.
func (l *Loop) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := l.Client.Get(ctx, req.NamespacedName, hc); err != nil {
		if apierrors.IsNotFound(err) {
			l.Guests.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// What a pass made for a destroyed cluster goes with its
	// control-plane namespace.
	if hc.DeletionTimestamp != nil || !l.Applies(hc) {
		l.Guests.Forget(req.NamespacedName)
		if hc.DeletionTimestamp == nil || l.Finalize == nil {
			return ctrl.Result{}, nil
		}
		done, err := l.Finalize(ctx, hc)
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("finalize", "controller", l.Name, "error", err.Error())
		}
		if done {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: finalizeRetry}, nil
	}
	again := ctrl.Result{RequeueAfter: l.Interval}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := l.Client.Get(ctx, hostedref.ControlPlaneKey(req.NamespacedName), hcp); err != nil {
		return again, client.IgnoreNotFound(err)
	}
	if !meta.IsStatusConditionTrue(hcp.Status.Conditions, string(hypershiftv1alpha1.Available)) {
		return again, nil
	}
	kube, err := l.Guests.Guest(ctx, hc, hcp)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("hosted cluster not reachable; no pass", "controller", l.Name, "error", err.Error())
		return again, nil
	}
	if err := l.Pass(ctx, hc, kube); err != nil {
		ctrl.LoggerFrom(ctx).Info("pass", "controller", l.Name, "error", err.Error())
	}
	return again, nil
}
