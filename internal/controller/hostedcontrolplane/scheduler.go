package hostedcontrolplane

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
)

// A cluster without NodePools and nodes has nothing to schedule, so its
// scheduler is started when the first NodePool is made or the first node
// registers (docs/hosted-clusters.md, "The scheduler starts with the first
// NodePool"): an idle control plane of such a cluster saves the
// scheduler's process. Once started it is kept — also when the pools and
// nodes go — so that it never flaps.

// schedulerWanted: the cluster has a NodePool, or has had a node since
// this operator started, or its scheduler runs (adopted after a restart,
// or started before the pools and nodes went).
func (r *Reconciler) schedulerWanted(hcp *hypershiftv1alpha1.HostedControlPlane, ref runtime.ControlPlaneRef) bool {
	if hcp.Annotations[hypershiftv1alpha1.NodePoolsAnnotation] == "true" {
		return true
	}
	if _, ok := r.nodesSeen.Load(client.ObjectKeyFromObject(hcp)); ok {
		return true
	}
	for _, in := range r.Runtime.Status(ref) {
		if in.Component == components.KubeScheduler && in.Phase != runtime.Stopped {
			return true
		}
	}
	return false
}

// sawNodes records that the hosted cluster has nodes; true the first time,
// when the scheduler has to be added.
func (r *Reconciler) sawNodes(key types.NamespacedName) bool {
	_, loaded := r.nodesSeen.LoadOrStore(key, struct{}{})
	return !loaded
}
