package hostedcontrolplane

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestDriftRestored(t *testing.T) {
	service := func(uid types.UID, rv string) client.Object {
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", UID: uid, ResourceVersion: rv},
		}
	}
	deployment := func(replicas int32, generation int64, rv string) client.Object {
		return &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns", UID: "d1", Generation: generation, ResourceVersion: rv},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		}
	}
	rendered := func(o client.Object) client.Object {
		o = o.DeepCopyObject().(client.Object)
		o.SetUID("")
		o.SetResourceVersion("")
		o.SetGeneration(0)
		return o
	}
	type apply struct {
		rendered, out client.Object
		want          string
	}
	for _, tc := range []struct {
		name    string
		applies []apply
	}{
		{"first apply over a connection says nothing", []apply{
			{rendered(service("u1", "5")), service("u1", "5"), ""},
		}},
		{"unchanged object: nothing", []apply{
			{rendered(service("u1", "5")), service("u1", "5"), ""},
			{rendered(service("u1", "5")), service("u1", "5"), ""},
		}},
		{"deleted and created again", []apply{
			{rendered(service("u1", "5")), service("u1", "5"), ""},
			{rendered(service("u1", "5")), service("u2", "9"), "Service kube-system/kube-dns was deleted in the hosted cluster; created again"},
			{rendered(service("u1", "5")), service("u2", "9"), ""},
		}},
		{"edited and changed back", []apply{
			{rendered(service("u1", "5")), service("u1", "5"), ""},
			{rendered(service("u1", "5")), service("u1", "7"), "Service kube-system/kube-dns was changed in the hosted cluster"},
		}},
		{"a workload's status moves, its spec does not: nothing", []apply{
			{rendered(deployment(2, 1, "10")), deployment(2, 1, "10"), ""},
			{rendered(deployment(2, 1, "10")), deployment(2, 1, "14"), ""},
		}},
		{"a workload scaled by hand and back", []apply{
			{rendered(deployment(2, 1, "10")), deployment(2, 1, "10"), ""},
			{rendered(deployment(2, 1, "10")), deployment(2, 3, "20"), "Deployment kube-system/coredns was changed in the hosted cluster"},
		}},
		{"a new rendering (an upgrade) is the control plane's own change", []apply{
			{rendered(deployment(2, 1, "10")), deployment(2, 1, "10"), ""},
			{rendered(deployment(3, 1, "10")), deployment(3, 2, "11"), ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d driftRecords
			for i, a := range tc.applies {
				got, err := d.restored(a.rendered, a.out)
				if err != nil {
					t.Fatal(err)
				}
				if (a.want == "") != (got == "") || !strings.Contains(got, a.want) {
					t.Errorf("apply %d: %q, want %q", i, got, a.want)
				}
			}
		})
	}
}

// TestDriftUnchanged: the cached object stands in for an apply only while
// it is exactly what the last apply of the same rendering left.
func TestDriftUnchanged(t *testing.T) {
	svc := func(uid types.UID, rv, clusterIP string) *corev1.Service {
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns", UID: uid, ResourceVersion: rv},
			Spec:       corev1.ServiceSpec{ClusterIP: clusterIP},
		}
	}
	rendered := svc("", "", "172.31.0.10")
	for _, tc := range []struct {
		name     string
		applied  bool // an apply of rendered returned uid u1, rv 5
		cached   *corev1.Service
		rendered *corev1.Service
		want     bool
	}{
		{"never applied over this connection", false, svc("u1", "5", "172.31.0.10"), rendered, false},
		{"not in the cache (deleted)", true, nil, rendered, false},
		{"as applied", true, svc("u1", "5", "172.31.0.10"), rendered, true},
		{"changed since", true, svc("u1", "6", "172.31.0.10"), rendered, false},
		{"created again", true, svc("u2", "5", "172.31.0.10"), rendered, false},
		{"a new rendering", true, svc("u1", "5", "172.31.0.10"), svc("", "", "172.31.0.11"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d driftRecords
			if tc.applied {
				if _, err := d.restored(rendered, svc("u1", "5", "172.31.0.10")); err != nil {
					t.Fatal(err)
				}
			}
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tc.cached != nil {
				cached := tc.cached.DeepCopy()
				cached.TypeMeta = metav1.TypeMeta{} // as informers hold them
				if err := indexer.Add(cached); err != nil {
					t.Fatal(err)
				}
			}
			got, err := d.unchanged(tc.rendered, indexer)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tc.want {
				t.Fatalf("unchanged = %v, want an object: %v", got, tc.want)
			}
			if got != nil && got.GetObjectKind().GroupVersionKind().Kind != "Service" {
				t.Errorf("the cached object comes back without its kind: %v", got.GetObjectKind().GroupVersionKind())
			}
		})
	}
}
