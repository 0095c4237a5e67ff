package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hypershift.dev/internal/controller/conditions"
)

// Pass is one reconcile of an object that holds a finalizer, can be paused
// by spec.pausedUntil and reports conditions.
type Pass struct {
	Client    client.Client
	Object    client.Object
	Finalizer string
	// Conditions points into Object's status; PausedUntil is its spec's.
	Conditions  *[]metav1.Condition
	PausedUntil *string
	Now         time.Time
}

// Run reconciles the object: while it is being deleted (and still holds the
// finalizer) by remove, which ends with RemoveFinalizer; otherwise, once the
// finalizer is on and unless paused, by reconcile. Either way the status
// changes are patched once, when the pass ends.
func (p Pass) Run(ctx context.Context, reconcile, remove func(context.Context) (ctrl.Result, error)) (_ ctrl.Result, reterr error) {
	obj := p.Object
	deleting := !obj.GetDeletionTimestamp().IsZero()
	if deleting && !controllerutil.ContainsFinalizer(obj, p.Finalizer) {
		return ctrl.Result{}, nil
	}
	if !deleting && controllerutil.AddFinalizer(obj, p.Finalizer) {
		if err := p.Client.Update(ctx, obj); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer %s to %s: %w", p.Finalizer, client.ObjectKeyFromObject(obj), err)
		}
	}
	patch, err := NewStatusPatch(obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		err := patch.Apply(ctx, p.Client)
		switch {
		case err == nil:
		case reterr == nil:
			reterr = err
		case isTerminal(reterr):
			// A terminal error is not retried, but the status that
			// reports it was not written: retry for that, naming both.
			reterr = fmt.Errorf("%w (after: %s)", err, reterr.Error())
		}
	}()
	if deleting {
		return remove(ctx)
	}
	paused, pausedFor := conditions.PausedFor(p.PausedUntil, p.Now)
	conditions.SetPaused(p.Conditions, obj.GetGeneration(), paused, p.PausedUntil)
	if paused {
		ctrl.LoggerFrom(ctx).Info("reconciliation paused", "pausedUntil", *p.PausedUntil)
		return ctrl.Result{RequeueAfter: pausedFor}, nil
	}
	return reconcile(ctx)
}

// isTerminal reports a reconcile.TerminalError, which is not retried.
func isTerminal(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}

// RemoveFinalizer lets the object go. An object already gone is done.
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string) error {
	if !controllerutil.RemoveFinalizer(obj, finalizer) {
		return nil
	}
	if err := c.Update(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer %s from %s: %w", finalizer, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
