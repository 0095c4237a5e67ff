package hostedcontrolplane

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/runtime"
)

// queuedLook is how often a queued control plane looks at the queue
// itself; a freed slot wakes the next in line at once (StartQueue.Admitted).
const queuedLook = 5 * time.Second

// reconcileStartQueue holds a control plane that would start from cold
// (none of its instances runs) until the start queue admits it; the phases
// after it (the runtime's Apply above all) wait. A control plane that runs
// — adopted after an operator restart, being upgraded, crash-looping — is
// never queued: the queue paces starts, not running clusters.
func (r *Reconciler) reconcileStartQueue(_ context.Context, s *scope) (ctrl.Result, error) {
	q, hcp := r.StartQueue, s.hcp
	if q == nil {
		return ctrl.Result{}, nil
	}
	if s.hibernated || s.fenced {
		q.Forget(s.ref)
		hcp.Status.StartQueue = nil
		return ctrl.Result{}, nil
	}
	if r.running(s.ref) {
		hcp.Status.StartQueue = nil
		return ctrl.Result{}, nil
	}
	admitted, place := q.Admit(s.ref, hcp.CreationTimestamp.Time)
	if admitted {
		hcp.Status.StartQueue = nil
		return ctrl.Result{}, nil
	}
	hcp.Status.StartQueue = &hypershiftv1alpha1.StartQueueStatus{
		Position: int32(place.Position), Length: int32(place.Length), //nolint:gosec // a queue of int32 size at most
		Since: metav1.NewTime(place.Since),
	}
	msg := fmt.Sprintf("Queued to start: position %d of %d; at most %d control planes start at once (the operator's --max-starting-control-planes)",
		place.Position, place.Length, q.Slots)
	conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Available, false, hypershiftv1alpha1.QueuedReason, msg)
	conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Progressing, true, hypershiftv1alpha1.QueuedReason, msg)
	hcp.Status.ObservedGeneration = hcp.Generation
	return ctrl.Result{RequeueAfter: queuedLook}, nil
}

// running: an instance of the control plane runs or is starting — also
// one an earlier operator started, which this one adopts: a cluster whose
// API never stopped is not queued (and never reported Available=False)
// after an operator restart.
func (r *Reconciler) running(ref runtime.ControlPlaneRef) bool {
	return r.Runtime.Running(ref)
}
