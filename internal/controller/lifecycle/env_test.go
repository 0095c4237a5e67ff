package lifecycle_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
)

// startWithPool starts a management API server and stores newPool() in
// it: the object the tests reconcile.
func startWithPool(t *testing.T) (*testenv.Env, *hypershiftv1alpha1.NodePool) {
	t.Helper()
	env := testenv.Start(t)
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	np := newPool()
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	return env, np
}

// newPool is a NodePool with no nodes, clusters/pool.
func newPool() *hypershiftv1alpha1.NodePool {
	return &hypershiftv1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "pool"},
		Spec: hypershiftv1alpha1.NodePoolSpec{
			ClusterName: "c", Replicas: ptr.To[int32](0),
			Platform: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.NonePlatform},
		},
	}
}
