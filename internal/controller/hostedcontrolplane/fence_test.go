package hostedcontrolplane

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/runtimetest"
)

func TestEtcdOnly(t *testing.T) {
	specs := []runtime.Spec{
		{Name: "etcd-0", Component: "etcd"},
		{Name: "etcd-1", Component: "etcd"},
		{Name: "kube-apiserver-0", Component: "kube-apiserver"},
		{Name: "kube-apiserver-proxy", Component: "kube-apiserver-proxy"},
		{Name: "kube-controller-manager", Component: "kube-controller-manager"},
		{Name: "konnectivity-server-0", Component: "konnectivity-server"},
	}
	got := etcdOnly(specs)
	if len(got) != 2 || got[0].Name != "etcd-0" || got[1].Name != "etcd-1" {
		t.Errorf("etcdOnly kept %+v, want etcd-0 and etcd-1", got)
	}
}

func TestFencedConditions(t *testing.T) {
	running, stopped := hypershiftv1alpha1.ComponentRunning, hypershiftv1alpha1.ComponentStopped
	st := func(name, component string, phase hypershiftv1alpha1.ComponentPhase) hypershiftv1alpha1.ComponentStatus {
		return hypershiftv1alpha1.ComponentStatus{Name: name, Component: component, Phase: phase}
	}
	for _, tc := range []struct {
		name                     string
		statuses                 []hypershiftv1alpha1.ComponentStatus
		writersLeft              []string
		fenced, etcd, degraded   bool
		fencedReason, etcdReason hypershiftv1alpha1.ConditionReason
	}{
		{
			name:     "writers still stopping",
			statuses: []hypershiftv1alpha1.ComponentStatus{st("etcd-0", "etcd", running), st("kube-apiserver", "kube-apiserver", running)},
			etcd:     true, fencedReason: hypershiftv1alpha1.FencingReason, etcdReason: hypershiftv1alpha1.AsExpectedReason,
		},
		{
			name:     "only etcd left",
			statuses: []hypershiftv1alpha1.ComponentStatus{st("etcd-0", "etcd", running), st("kube-apiserver", "kube-apiserver", stopped)},
			fenced:   true, etcd: true, fencedReason: hypershiftv1alpha1.FencedReason, etcdReason: hypershiftv1alpha1.AsExpectedReason,
		},
		{
			// The kube runtime's status counts a terminating pod as
			// stopped; its API server may still write until it exits.
			name:        "a terminating pod the runtime reports left",
			statuses:    []hypershiftv1alpha1.ComponentStatus{st("etcd-0", "etcd", running), st("kube-apiserver-0", "kube-apiserver", stopped)},
			writersLeft: []string{"pod kube-apiserver-5d9c-x is terminating"},
			etcd:        true, fencedReason: hypershiftv1alpha1.FencingReason, etcdReason: hypershiftv1alpha1.AsExpectedReason,
		},
		{
			name: "etcd quorum lost is reported",
			statuses: []hypershiftv1alpha1.ComponentStatus{
				st("etcd-0", "etcd", running), st("etcd-1", "etcd", hypershiftv1alpha1.ComponentBackOff), st("etcd-2", "etcd", hypershiftv1alpha1.ComponentBackOff),
			},
			fenced: true, degraded: true, fencedReason: hypershiftv1alpha1.FencedReason, etcdReason: hypershiftv1alpha1.ComponentNotReadyReason,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[hypershiftv1alpha1.ConditionType]fenceCondition{}
			for _, c := range fencedConditions(tc.statuses, tc.writersLeft) {
				got[c.typ] = c
			}
			check := func(typ hypershiftv1alpha1.ConditionType, status bool, reason hypershiftv1alpha1.ConditionReason) {
				t.Helper()
				c, ok := got[typ]
				if !ok || c.status != status || (reason != "" && c.reason != reason) {
					t.Errorf("%s = %+v, want %v/%s", typ, c, status, reason)
				}
			}
			check(hypershiftv1alpha1.Fenced, tc.fenced, tc.fencedReason)
			for _, w := range tc.writersLeft {
				if !strings.Contains(got[hypershiftv1alpha1.Fenced].message, w) {
					t.Errorf("Fenced message %q does not name %q", got[hypershiftv1alpha1.Fenced].message, w)
				}
			}
			check(hypershiftv1alpha1.EtcdAvailable, tc.etcd, tc.etcdReason)
			check(hypershiftv1alpha1.Degraded, tc.degraded, "")
			check(hypershiftv1alpha1.Available, false, hypershiftv1alpha1.FencedReason)
			check(hypershiftv1alpha1.KubeAPIServerAvailable, false, hypershiftv1alpha1.FencedReason)
		})
	}
}

// TestFenceInPlace: on a runtime that fences in place, the fence hands it
// every rendered instance (an Apply of etcd alone would delete the
// Services) and calls Fence instead of Apply; what it reports left keeps
// Fenced False.
func TestFenceInPlace(t *testing.T) {
	fencer := &runtimetest.Fake{Caps: runtime.Kube, FenceLeft: []string{"pod kube-apiserver-7f-x is terminating"}}
	r := &Reconciler{Runtime: fencer, Clusters: clustercache.New(clustercache.Options{})}
	specs := []runtime.Spec{{Name: "etcd-0", Component: "etcd"}, {Name: "kube-apiserver-0", Component: "kube-apiserver"}}
	s := &scope{
		hcp: &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{
			Namespace: "clusters-a", Name: "a",
			Annotations: map[string]string{hypershiftv1alpha1.FencedAnnotation: "true"},
		}},
		specs: specs,
	}
	if _, err := r.reconcileFence(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if !s.fenced || !s.fenceInPlace || len(s.specs) != len(specs) {
		t.Fatalf("fenced %v, in place %v, specs %d: want fenced in place with all %d specs", s.fenced, s.fenceInPlace, len(s.specs), len(specs))
	}
	if _, err := r.reconcileRuntime(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	if got := fencer.Fenced(); len(got) != len(specs) {
		t.Errorf("Fence got %d specs, want %d", len(got), len(specs))
	}
	if !slices.Equal(s.writersLeft, fencer.FenceLeft) {
		t.Errorf("writers left %q, want %q", s.writersLeft, fencer.FenceLeft)
	}
}
