package guestpass

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/version"
)

type noGuests struct{ forgot int }

func (*noGuests) Guest(context.Context, *hypershiftv1alpha1.HostedCluster, *hypershiftv1alpha1.HostedControlPlane) (kubernetes.Interface, error) {
	panic("no pass runs for a deleted cluster")
}
func (g *noGuests) Forget(types.NamespacedName) { g.forgot++ }

// A deleted cluster gets Finalize, again until it is done, and no pass.
func TestLoopFinalizesDeletedClusters(t *testing.T) {
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "dev", hypershiftv1alpha1.KubeVirtPlatform, version.KubernetesVersion)
	hc.Finalizers = []string{"example.dev/keep"}
	hc.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(hc).Build()
	done, calls := false, 0
	guests := &noGuests{}
	l := &Loop{
		Name: "test", Client: c, Guests: guests, Interval: time.Minute,
		Applies: func(*hypershiftv1alpha1.HostedCluster) bool { return true },
		Pass: func(context.Context, *hypershiftv1alpha1.HostedCluster, kubernetes.Interface) error {
			t.Fatal("a pass for a deleted cluster")
			return nil
		},
		Finalize: func(context.Context, *hypershiftv1alpha1.HostedCluster) (bool, error) { calls++; return done, nil },
	}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hc)}
	res, err := l.Reconcile(t.Context(), req)
	if err != nil || res.RequeueAfter != finalizeRetry || calls != 1 {
		t.Fatalf("not done: %+v, %v, %d calls; want a retry after %s", res, err, calls, finalizeRetry)
	}
	done = true
	res, err = l.Reconcile(t.Context(), req)
	if err != nil || !res.IsZero() || calls != 2 || guests.forgot != 2 {
		t.Fatalf("done: %+v, %v, %d calls, %d forgets", res, err, calls, guests.forgot)
	}
}
