package hostedcontrolplane

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/runtime"
)

// A fenced control plane runs etcd only: every instance that can write to
// it (API servers, controller manager, scheduler, Konnectivity server,
// endpoint proxy) is left out of what the runtime applies, so the runtime
// stops them and their ports are free, while etcd keeps serving its
// members and the operator's snapshot. The HostedCluster controller
// decides the fence (hibernation and the runtime's support) and copies it
// onto the HostedControlPlane as FencedAnnotation.
//
//	running ──fenced──▶ Fencing (writers stop) ──none left──▶ Fenced
//	   ▲                                                         │
//	   └──────────────── annotation removed: all start again ◀──┘

// fenced: the HostedCluster controller fenced this control plane.
func fenced(hcp *hypershiftv1alpha1.HostedControlPlane) bool {
	return hcp.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true"
}

// reconcileFence keeps only etcd of the rendered instances while the
// control plane is fenced, and closes the connection to the hosted
// cluster, whose API is going away. A sleeping control plane has nothing
// left to fence: hibernation stops etcd too.
func (r *Reconciler) reconcileFence(_ context.Context, s *scope) (ctrl.Result, error) {
	s.fenced = fenced(s.hcp) && !s.hibernated
	if !s.fenced {
		return ctrl.Result{}, nil
	}
	r.hostedClusters().ext.Forget(client.ObjectKeyFromObject(s.hcp))
	// A runtime that fences in place (the kube runtime) keeps what an
	// Apply of etcd alone would delete: its Services with their node ports
	// and load balancer addresses.
	if r.Runtime.Capabilities().InPlace {
		s.fenceInPlace = true // reconcileRuntime calls Fence instead of Apply
		return ctrl.Result{}, nil
	}
	s.specs = etcdOnly(s.specs)
	return ctrl.Result{}, nil
}

// fenceInPlace has a runtime that fences in place stop the writers (the kube
// runtime scales its Deployments to 0) and keeps what it reports left.
func (r *Reconciler) fenceInPlace(ctx context.Context, s *scope) error {
	left, err := r.Runtime.Fence(ctx, s.ref, s.specs)
	if err != nil {
		conditions.Set(&s.hcp.Status.Conditions, s.hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RuntimeErrorReason, err.Error())
		return fmt.Errorf("fence: %w", err)
	}
	s.writersLeft = left
	return nil
}

// etcdOnly are the etcd instances of specs.
func etcdOnly(specs []runtime.Spec) []runtime.Spec {
	keep := make([]runtime.Spec, 0, len(specs))
	for _, spec := range specs {
		if spec.Component == components.Etcd {
			keep = append(keep, spec)
		}
	}
	return keep
}

// updateFencedStatus reports a fenced control plane: Fenced once nothing
// but etcd runs, not Available, etcd's own health as usual.
func (r *Reconciler) updateFencedStatus(s *scope) {
	hcp := s.hcp
	statuses := componentStatuses(r.Runtime.Status(s.ref))
	hcp.Status.Components = statuses
	hcp.Status.Ready = false
	clusterAPIContract(&hcp.Status, false)
	hcp.Status.ObservedGeneration = hcp.Generation
	for _, c := range fencedConditions(statuses, s.writersLeft) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, c.typ, c.status, c.reason, c.message)
	}
	if !conditions.IsTrue(hcp.Status.Conditions, hypershiftv1alpha1.Fenced) {
		s.requeueAfter(time.Second)
	}
}

// fenceCondition is one condition a fenced control plane reports.
type fenceCondition struct {
	typ     hypershiftv1alpha1.ConditionType
	status  bool
	reason  hypershiftv1alpha1.ConditionReason
	message string
}

// fencedConditions derives a fenced control plane's conditions from its
// instances' states and the writers an in-place fence reports left (pods
// of the kube runtime, also terminating ones, which an instance's status
// counts as stopped): Fenced is True only once every instance that is not
// etcd has stopped and no writer is left.
func fencedConditions(statuses []hypershiftv1alpha1.ComponentStatus, writersLeft []string) []fenceCondition {
	var left, etcd []hypershiftv1alpha1.ComponentStatus
	for _, st := range statuses {
		switch {
		case st.Component == components.Etcd:
			etcd = append(etcd, st)
		case st.Phase != hypershiftv1alpha1.ComponentStopped:
			left = append(left, st)
		}
	}
	why := fmt.Sprintf("The control plane is fenced (annotation %s): etcd runs, every writer is stopped; remove the annotation to start them again", hypershiftv1alpha1.FencedAnnotation)
	out := []fenceCondition{
		{hypershiftv1alpha1.Available, false, hypershiftv1alpha1.FencedReason, why},
		{hypershiftv1alpha1.KubeAPIServerAvailable, false, hypershiftv1alpha1.FencedReason, why},
		{hypershiftv1alpha1.Progressing, false, hypershiftv1alpha1.FencedReason, why},
		{hypershiftv1alpha1.DataPlaneAvailable, false, hypershiftv1alpha1.FencedReason, why},
		{hypershiftv1alpha1.Hibernated, false, hypershiftv1alpha1.NotHibernatedReason, "The control plane is fenced, not hibernated: etcd runs"},
	}
	if len(left) > 0 || len(writersLeft) > 0 {
		names := make([]string, 0, len(left)+len(writersLeft))
		for _, st := range left {
			names = append(names, st.Name+" is "+string(st.Phase))
		}
		names = append(names, writersLeft...)
		out = append(out, fenceCondition{hypershiftv1alpha1.Fenced, false, hypershiftv1alpha1.FencingReason, "Stopping the writers of etcd: " + joinMessages(names)})
	} else {
		out = append(out, fenceCondition{hypershiftv1alpha1.Fenced, true, hypershiftv1alpha1.FencedReason, why})
	}
	ok, etcdCond := componentCondition(hypershiftv1alpha1.EtcdAvailable, etcd, len(etcd)/2+1)
	out = append(out, fenceCondition{hypershiftv1alpha1.EtcdAvailable, ok, hypershiftv1alpha1.ConditionReason(etcdCond.Reason), etcdCond.Message})
	var failing []string
	for _, st := range etcd {
		if st.Phase == hypershiftv1alpha1.ComponentBackOff || st.Phase == hypershiftv1alpha1.ComponentUnhealthy {
			failing = append(failing, fmt.Sprintf("%s is %s (restarts %d, last exit %q): %s", st.Name, st.Phase, st.Restarts, st.LastExitReason, st.Message))
		}
	}
	if len(failing) > 0 {
		out = append(out, fenceCondition{hypershiftv1alpha1.Degraded, true, hypershiftv1alpha1.ComponentNotReadyReason, joinMessages(failing)})
	} else {
		out = append(out, fenceCondition{hypershiftv1alpha1.Degraded, false, hypershiftv1alpha1.AsExpectedReason, "No component is failing"})
	}
	return out
}

// setNotFenced reports a control plane that is not fenced.
func setNotFenced(hcp *hypershiftv1alpha1.HostedControlPlane) {
	conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Fenced, false,
		hypershiftv1alpha1.NotFencedReason, "The control plane is not fenced")
}
