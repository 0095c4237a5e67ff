package hostmachine

import (
	"context"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/runtime"
)

// ClusterReconciler reconciles HostClusters: provisioned, and Ready, when
// the operator has a machine network. Nothing is made for them.
type ClusterReconciler struct {
	Client client.Client
	// Machines makes the machines; nil: this operator runs no machines.
	Machines runtime.Machines
}

// SetupWithManager registers the controller.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.HostCluster{}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	hc := &hypershiftv1alpha1.HostCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, hc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !hc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	patch, err := lifecycle.NewStatusPatch(hc)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		if err := patch.Apply(ctx, r.Client); err != nil && reterr == nil {
			reterr = err
		}
	}()
	set := func(ready bool, reason hypershiftv1alpha1.ConditionReason, msg string) {
		conditions.Set(&hc.Status.Conditions, hc.Generation, ReadyCondition, ready, reason, msg)
	}
	if r.Machines == nil {
		set(false, NoMachineNetworkReason, noMachinesMessage)
		return ctrl.Result{}, nil
	}
	if err := r.Machines.Check(ctx); err != nil {
		// Once provisioned, it stays so (Cluster API's contract); Ready
		// says the machines cannot be made now.
		set(false, NoMachineNetworkReason, err.Error())
		return ctrl.Result{RequeueAfter: machineRecheck}, nil
	}
	hc.Status.Initialization.Provisioned = ptr.To(true)
	set(true, MachineNetworkReadyReason, "Machines are made in "+r.Machines.Where())
	return ctrl.Result{}, nil
}
