package hostedcluster

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestNotRestartedSince(t *testing.T) {
	drop := time.Date(2026, 1, 1, 12, 0, 0, 500_000_000, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(drop.Add(d).Truncate(time.Second)); return &t }
	running := hypershiftv1alpha1.ComponentRunning
	hcp := &hypershiftv1alpha1.HostedControlPlane{Status: hypershiftv1alpha1.HostedControlPlaneStatus{Components: []hypershiftv1alpha1.ComponentStatus{
		{Name: "etcd", Component: "etcd", Phase: running, StartedAt: at(-time.Minute)},
		{Name: "kube-apiserver", Component: "kube-apiserver", Phase: running, StartedAt: at(3 * time.Second)},
		// Started in the drop's second: stored in seconds, it counts.
		{Name: "konnectivity-server", Component: "konnectivity-server", Phase: running, StartedAt: at(100 * time.Millisecond)},
		{Name: "kube-controller-manager", Component: "kube-controller-manager", Phase: running, StartedAt: at(-time.Minute)},
		{Name: "kube-apiserver-1", Component: "kube-apiserver", Phase: hypershiftv1alpha1.ComponentBackOff, StartedAt: at(time.Second)},
		{Name: "etcd-2", Component: "etcd", Phase: running},
	}}}
	got := notRestartedSince(hcp, drop, restartedAtDropOld)
	want := []string{"etcd", "kube-apiserver-1", "etcd-2"}
	if !slices.Equal(got, want) {
		t.Fatalf("waiting for %v, want %v (the controller manager reloads nothing it needs restarted for)", got, want)
	}
	if obs := observeRestarted(hcp, drop); obs.done {
		t.Fatal("DropOld done while etcd had not restarted")
	}
	for i := range hcp.Status.Components {
		hcp.Status.Components[i].Phase, hcp.Status.Components[i].StartedAt = running, at(2*time.Second)
	}
	if obs := observeRestarted(hcp, drop); !obs.done {
		t.Fatalf("every instance restarted, still waiting: %s", obs.waiting)
	}
}
