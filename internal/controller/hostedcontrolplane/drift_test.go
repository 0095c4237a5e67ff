package hostedcontrolplane

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
