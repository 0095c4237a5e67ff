package nodepool

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
)

// clusterFenced: the pool's cluster is fenced or on its way to (only its
// etcd runs; hypershift.dev/fenced).
func clusterFenced(hc *hypershiftv1alpha1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Fenced.String())
	return c != nil && (c.Reason == hypershiftv1alpha1.FencedReason.String() || c.Reason == hypershiftv1alpha1.FencingReason.String())
}

// fence lets the platform's machines sleep while their cluster is fenced,
// as during hibernation: a fence comes before a migration, and the pool's
// nodes must not run on two management planes at once (the target's
// operator starts its own agent). Nothing is deleted or repaired; lifting
// the fence starts them again.
func (r *Reconciler) fence(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := types.NamespacedName{Namespace: s.hc.Namespace, Name: s.hc.Name}
	r.hosted.forget(key)
	if err := s.platform.sleep(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	conditions.Set(&s.np.Status.Conditions, s.np.Generation, hypershiftv1alpha1.NodePoolReady, false,
		hypershiftv1alpha1.HostedClusterFencedReason,
		fmt.Sprintf("HostedCluster %s is fenced (annotation %s); the pool's machines are stopped until the fence is lifted", key, hypershiftv1alpha1.FencedAnnotation))
	return ctrl.Result{RequeueAfter: 5 * time.Minute}, nil // its watch brings the change
}
