package nodepool

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/hostedref"
)

// clusterSleeps: the pool's cluster hibernates or is on its way to.
func clusterSleeps(hc *hypershiftv1alpha1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String())
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == hypershiftv1alpha1.HibernatingReason.String())
}

// sleep closes the connection to a hibernating cluster and lets the
// platform's machines sleep with it; nothing is deleted or repaired.
func (r *Reconciler) sleep(ctx context.Context, s *scope) (ctrl.Result, error) {
	key := types.NamespacedName{Namespace: s.hc.Namespace, Name: s.hc.Name}
	r.hosted.forget(key)
	if err := s.platform.sleep(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	conditions.Set(&s.np.Status.Conditions, s.np.Generation, hypershiftv1alpha1.NodePoolReady, false,
		hypershiftv1alpha1.HostedClusterHibernatedReason,
		fmt.Sprintf("HostedCluster %s hibernates; the pool's nodes come back when it resumes", key))
	return ctrl.Result{RequeueAfter: 5 * time.Minute}, nil // its watch brings the resume
}

// operatorKubeconfig is the kubeconfig the controller reaches a hosted
// cluster with: the one every controller of the operator uses
// (hostedref.OperatorKubeconfig, from the cluster's HostedControlPlane).
// Nodes keep the public endpoint.
func (r *Reconciler) operatorKubeconfig(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kc []byte) ([]byte, error) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	key := hostedref.ControlPlaneKey(client.ObjectKeyFromObject(hc))
	if err := r.Client.Get(ctx, key, hcp); err != nil {
		return nil, fmt.Errorf("HostedControlPlane %s: %w", key, err)
	}
	return hostedref.OperatorKubeconfig(kc, hcp)
}
