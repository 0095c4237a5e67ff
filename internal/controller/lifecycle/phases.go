// Package lifecycle is the scaffolding the controllers' Reconcile functions
// share: the finalizer, pausing by spec.pausedUntil, one status patch at the
// end of every pass (the delete path included), and ordered, named phases.
//
// A pass goes:
//
//	deleting? ── no finalizer ──▶ done
//	    │ yes                      │ no
//	    ▼                          ▼
//	  delete phases          add finalizer ─▶ paused? ─ yes ─▶ ReconciliationActive=False, requeue at the date
//	    │                                        │ no
//	    │                                        ▼
//	    │                                  ReconciliationActive=True, phases
//	    └──────────────┬─────────────────────────┘
//	                   ▼
//	     one merge patch of what changed in status
package lifecycle

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Phase is one named step of a reconcile over the scope S a controller's
// phases share.
type Phase[S any] struct {
	Name string
	Run  func(context.Context, S) (ctrl.Result, error)
}

// RunPhases runs phases in order.
//
// An error stops the list and comes back wrapped with the phase's name.
// A non-zero result stops it too: later phases use what earlier ones found
// (the HostedControlPlane, the hosted cluster's client), so a phase returns
// a requeue only when the phases after it cannot run yet. A phase that
// merely wants another look soon records that in its scope, and the
// controller merges it with Soonest.
func RunPhases[S any](ctx context.Context, s S, phases []Phase[S]) (ctrl.Result, error) {
	for _, p := range phases {
		res, err := p.Run(ctx, s)
		if err != nil {
			return res, fmt.Errorf("%s: %w", p.Name, err)
		}
		if !res.IsZero() {
			return res, nil
		}
	}
	return ctrl.Result{}, nil
}

// Soonest merges results: the lowest non-zero RequeueAfter wins.
func Soonest(results ...ctrl.Result) ctrl.Result {
	var out ctrl.Result
	for _, r := range results {
		if r.RequeueAfter > 0 && (out.RequeueAfter == 0 || r.RequeueAfter < out.RequeueAfter) {
			out.RequeueAfter = r.RequeueAfter
		}
	}
	return out
}
