package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/scheme"
)

const finalizer = "hypershift.dev/test"

// TestPass drives passes over a NodePool in a real API server: the
// finalizer, pausing, the one status patch, and the delete path's status
// and finalizer.
func TestPass(t *testing.T) {
	env, np := startWithPool(t)
	c, ctx := env.Client, t.Context()
	key := client.ObjectKeyFromObject(np)
	type step = func(context.Context, *hypershiftv1alpha1.NodePool) (ctrl.Result, error)
	pass := func(reconcile, remove step) (ctrl.Result, error) {
		got := &hypershiftv1alpha1.NodePool{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		p := lifecycle.Pass{
			Client: c, Object: got, Finalizer: finalizer,
			Conditions: &got.Status.Conditions, PausedUntil: got.Spec.PausedUntil, Now: time.Now(),
		}
		return p.Run(ctx,
			func(ctx context.Context) (ctrl.Result, error) { return reconcile(ctx, got) },
			func(ctx context.Context) (ctrl.Result, error) { return remove(ctx, got) })
	}
	noRemove := func(context.Context, *hypershiftv1alpha1.NodePool) (ctrl.Result, error) {
		t.Error("delete path ran for an object not being deleted")
		return ctrl.Result{}, nil
	}
	stored := func() *hypershiftv1alpha1.NodePool {
		got := &hypershiftv1alpha1.NodePool{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	// A pass adds the finalizer, reports reconciliation active and writes
	// what reconcile set.
	res, err := pass(func(_ context.Context, obj *hypershiftv1alpha1.NodePool) (ctrl.Result, error) {
		obj.Status.Replicas = 3
		conditions.Set(&obj.Status.Conditions, obj.Generation, hypershiftv1alpha1.NodePoolReady, false, hypershiftv1alpha1.WaitingForNodesReason, "0 of 3")
		return ctrl.Result{RequeueAfter: time.Minute}, nil
	}, noRemove)
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	got := stored()
	if !slices.Contains(got.Finalizers, finalizer) {
		t.Errorf("finalizers %v lack %s", got.Finalizers, finalizer)
	}
	if got.Status.Replicas != 3 || !meta.IsStatusConditionTrue(got.Status.Conditions, hypershiftv1alpha1.ReconciliationActive.String()) ||
		meta.FindStatusCondition(got.Status.Conditions, hypershiftv1alpha1.NodePoolReady.String()) == nil {
		t.Errorf("status not written: %+v", got.Status)
	}

	// Paused: reconcile does not run; the pause is reported.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.PausedUntil = ptr.To("true")
	if err := c.Patch(ctx, got, patch); err != nil {
		t.Fatal(err)
	}
	if _, err := pass(func(context.Context, *hypershiftv1alpha1.NodePool) (ctrl.Result, error) {
		t.Error("reconcile ran while paused")
		return ctrl.Result{}, nil
	}, noRemove); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(stored().Status.Conditions, hypershiftv1alpha1.ReconciliationActive.String())
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != hypershiftv1alpha1.ReconciliationPausedReason.String() {
		t.Errorf("ReconciliationActive = %+v, want False/%s", cond, hypershiftv1alpha1.ReconciliationPausedReason)
	}

	// Deleting: the delete path's status is written by the same patch,
	// and a pass that removes the finalizer ends without error although
	// the object is gone by the time status would be written.
	if err := c.Delete(ctx, stored()); err != nil {
		t.Fatal(err)
	}
	res, err = pass(noRemove, func(_ context.Context, obj *hypershiftv1alpha1.NodePool) (ctrl.Result, error) {
		conditions.Set(&obj.Status.Conditions, obj.Generation, hypershiftv1alpha1.NodePoolReady, false, hypershiftv1alpha1.DeletingReason, "draining")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	})
	if err != nil || res.RequeueAfter != time.Second {
		t.Fatalf("delete pass: %+v, %v", res, err)
	}
	cond = meta.FindStatusCondition(stored().Status.Conditions, hypershiftv1alpha1.NodePoolReady.String())
	if cond == nil || cond.Reason != hypershiftv1alpha1.DeletingReason.String() {
		t.Errorf("Ready = %+v, want reason %s from the delete path", cond, hypershiftv1alpha1.DeletingReason)
	}
	_, err = pass(noRemove, func(ctx context.Context, obj *hypershiftv1alpha1.NodePool) (ctrl.Result, error) {
		err := lifecycle.RemoveFinalizer(ctx, c, obj, finalizer)
		// A status change after the object went: its patch finds nothing.
		conditions.Set(&obj.Status.Conditions, obj.Generation, hypershiftv1alpha1.NodePoolReady, false, hypershiftv1alpha1.DeletingReason, "gone")
		return ctrl.Result{}, err
	})
	if err != nil {
		t.Fatalf("last delete pass: %v", err)
	}
	if err := c.Get(ctx, key, &hypershiftv1alpha1.NodePool{}); !apierrors.IsNotFound(err) {
		t.Errorf("NodePool still there after its finalizer went: %v", err)
	}
}

// TestPassRetriesATerminalErrorWhoseStatusWasNotWritten: a terminal error
// is not retried, so a pass that returns one must have written the status
// that reports it; when that write fails, the pass returns an error that
// is retried.
func TestPassRetriesATerminalErrorWhoseStatusWasNotWritten(t *testing.T) {
	env, np := startWithPool(t)
	ctx := t.Context()
	refused := errors.New("status write refused")
	ww, err := client.NewWithWatch(env.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(ww, interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return refused
		},
	})
	p := lifecycle.Pass{Client: c, Object: np, Finalizer: finalizer, Conditions: &np.Status.Conditions, Now: time.Now()}
	_, err = p.Run(ctx, func(context.Context) (ctrl.Result, error) {
		conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.ValidConfiguration, false, hypershiftv1alpha1.InvalidConfigurationReason, "bad")
		return ctrl.Result{}, reconcile.TerminalError(errors.New("invalid spec"))
	}, nil)
	if !errors.Is(err, refused) {
		t.Fatalf("pass error %v does not carry the failed status write", err)
	}
	if errors.Is(err, reconcile.TerminalError(nil)) {
		t.Errorf("pass error %v is terminal: the status write would never be retried", err)
	}
}
