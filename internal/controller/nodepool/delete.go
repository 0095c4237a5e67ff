package nodepool

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
)

// reconcileDelete drains and removes the pool's nodes (as a scale to zero,
// honouring nodeDrainTimeout), removes its token, machine list and RBAC
// from the hosted cluster, stops its agent, then lets the NodePool go. When
// the hosted cluster is gone or being deleted there is nothing to drain:
// only the agent is stopped.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	np := s.np
	if !controllerutil.ContainsFinalizer(np, Finalizer) {
		return ctrl.Result{}, nil
	}
	s.deleting = true
	key := types.NamespacedName{Namespace: np.Namespace, Name: np.Spec.ClusterName}
	hc := &hypershiftv1alpha1.HostedCluster{}
	err := r.Client.Get(ctx, key, hc)
	switch {
	case apierrors.IsNotFound(err):
		r.hosted.forget(key)
	case err != nil:
		return ctrl.Result{}, err
	case hc.DeletionTimestamp.IsZero():
		s.hc = hc
		if res, err := r.drainAll(ctx, s); err != nil || !res.IsZero() {
			return res, err
		}
	default: // being deleted: its control plane goes, and the connection with it
		r.hosted.forget(key)
	}
	if err := s.platform.delete(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(np, Finalizer)
	if err := r.Client.Update(ctx, np); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s.log.Info("nodepool deleted")
	return ctrl.Result{}, nil
}

// drainAll scales the pool to zero, then cleans up the hosted cluster.
func (r *Reconciler) drainAll(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !conditions.IsTrue(s.hc.Status.Conditions, hypershiftv1alpha1.Available) || s.hc.Status.KubeConfig == nil {
		return r.deletingStatus(s, fmt.Sprintf("Waiting for HostedCluster %s/%s to be Available to drain the nodes", s.hc.Namespace, s.hc.Name), 5*time.Second)
	}
	if err := r.connect(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.platform.validate(s) == nil {
		idle, err := s.platform.idle(s, 0)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !idle {
			if res, err := r.drainMachines(ctx, s); err != nil || !res.IsZero() {
				return res, err
			}
		}
		if err := s.platform.cleanup(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, deleteTokens(ctx, s)
}

// drainMachines scales a deleted pool's machines to zero; the agent drains
// with the credentials it runs with, so it keeps a token meanwhile.
func (r *Reconciler) drainMachines(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.platform.needsToken() {
		if err := r.ensureToken(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	report, err := s.platform.reconcile(ctx, s, 0)
	if err != nil {
		return ctrl.Result{}, err
	}
	if report.machines > 0 {
		return r.deletingStatus(s, fmt.Sprintf("Draining and removing %d machines (draining: %s)", report.machines, names(report.draining)), requeueBusy)
	}
	return ctrl.Result{}, nil
}

// deletingStatus reports deletion progress; the pass patches it.
func (r *Reconciler) deletingStatus(s *scope, msg string, after time.Duration) (ctrl.Result, error) {
	conditions.Set(&s.np.Status.Conditions, s.np.Generation, hypershiftv1alpha1.NodePoolReady, false, hypershiftv1alpha1.DeletingReason, msg)
	return ctrl.Result{RequeueAfter: after}, nil
}
