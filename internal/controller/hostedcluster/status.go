package hostedcluster

import (
	"context"
	"fmt"
	"net"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
)

// mirrored are the HostedControlPlane conditions a HostedCluster reports.
var mirrored = []hypershiftv1alpha1.ConditionType{
	hypershiftv1alpha1.Available,
	hypershiftv1alpha1.Progressing,
	hypershiftv1alpha1.Degraded,
	hypershiftv1alpha1.EtcdAvailable,
	hypershiftv1alpha1.KubeAPIServerAvailable,
	hypershiftv1alpha1.DataPlaneAvailable,
	hypershiftv1alpha1.ClusterVersionProgressing,
	hypershiftv1alpha1.Hibernated,
	hypershiftv1alpha1.Fenced,
}

// updateStatus derives the HostedCluster's status from its control plane.
func (r *Reconciler) updateStatus(s *scope) {
	hc := s.hc
	if s.conflict != "" {
		// Nothing of another owner is reported or handed out.
		hc.Status.ControlPlaneNamespace = ""
		if s.nsOwned {
			hc.Status.ControlPlaneNamespace = s.ns
		}
		hc.Status.KubeConfig = nil
		for _, typ := range []hypershiftv1alpha1.ConditionType{hypershiftv1alpha1.ValidConfiguration, hypershiftv1alpha1.Available} {
			conditions.Set(&hc.Status.Conditions, hc.Generation, typ, false,
				hypershiftv1alpha1.ControlPlaneNamespaceConflictReason, s.conflict)
		}
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.Progressing, false,
			hypershiftv1alpha1.ControlPlaneNamespaceConflictReason, "Refused: "+s.conflict)
		return
	}
	hc.Status.ControlPlaneNamespace = s.ns
	if s.hcp == nil {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.Available, false,
			hypershiftv1alpha1.WaitingForControlPlaneReason, "Waiting for the hosted control plane to be created")
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.Progressing, true,
			hypershiftv1alpha1.WaitingForControlPlaneReason, "Creating the hosted control plane")
		return
	}
	hcp := s.hcp
	mirrorControlPlane(&hc.Status.Conditions, hc.Generation, hcp.Status.Conditions)
	hc.Status.Version = hcp.Status.Version
	hc.Status.VersionHistory = hcp.Status.VersionHistory
	hc.Status.ControlPlaneEndpoint = hcp.Status.ControlPlaneEndpoint
	hc.Status.StartQueue = hcp.Status.StartQueue
	if ep := hcp.Status.ControlPlaneEndpoint; ep.Port != 0 {
		hc.Status.Endpoint = "https://" + net.JoinHostPort(ep.Host, fmt.Sprint(ep.Port))
	}
}

// mirrorControlPlane reports the HostedControlPlane's conditions as the
// HostedCluster's. A condition the control plane has not reported yet is
// Unknown; one whose status is unchanged keeps its lastTransitionTime, and
// one that changed takes the control plane's.
func mirrorControlPlane(conds *[]metav1.Condition, generation int64, hcp []metav1.Condition) {
	for _, typ := range mirrored {
		conditions.Mirror(conds, generation, typ, hcp,
			hypershiftv1alpha1.WaitingForComponentsReason, "The hosted control plane has not reported "+typ.String()+" yet")
	}
}

// countNodes sums the nodes of the cluster's NodePools into its status.
func (r *Reconciler) countNodes(ctx context.Context, s *scope) error {
	pools, err := s.nodePools(ctx, r.Client)
	if err != nil {
		return err
	}
	var nodes, ready int32
	for _, np := range pools {
		nodes += np.Status.Replicas
		ready += np.Status.ReadyReplicas
	}
	s.hc.Status.NodeCount, s.hc.Status.ReadyNodeCount = nodes, ready
	return nil
}

// nodePools are the NodePools that name the cluster, listed once per pass
// (from the cache): the control plane's node-pools annotation and the node
// counts read the same listing.
func (s *scope) nodePools(ctx context.Context, c client.Client) ([]*hypershiftv1alpha1.NodePool, error) {
	if s.pools != nil {
		return *s.pools, nil
	}
	list := &hypershiftv1alpha1.NodePoolList{}
	if err := c.List(ctx, list, client.InNamespace(s.hc.Namespace)); err != nil {
		return nil, fmt.Errorf("list NodePools: %w", err)
	}
	pools := []*hypershiftv1alpha1.NodePool{}
	for i := range list.Items {
		if list.Items[i].Spec.ClusterName == s.hc.Name {
			pools = append(pools, &list.Items[i])
		}
	}
	s.pools = &pools
	return pools, nil
}

// nodePoolToHostedCluster maps a NodePool to the HostedCluster it names.
func nodePoolToHostedCluster(_ context.Context, obj client.Object) []reconcile.Request {
	np, ok := obj.(*hypershiftv1alpha1.NodePool)
	if !ok || np.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: np.Namespace, Name: np.Spec.ClusterName}}}
}

// nodeCountChanged passes NodePool events that can change a cluster's node
// counts, not every status update of a pool.
var nodeCountChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*hypershiftv1alpha1.NodePool)
		after, ok2 := e.ObjectNew.(*hypershiftv1alpha1.NodePool)
		return !ok1 || !ok2 || before.Status.Replicas != after.Status.Replicas || before.Status.ReadyReplicas != after.Status.ReadyReplicas
	},
}
