package kube

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSleepScalesToZeroAndApplyBack: a hibernating control plane's
// workloads go to 0 replicas with its Services (and their node ports)
// kept, and the next Apply brings the replicas back.
func TestSleepScalesToZeroAndApplyBack(t *testing.T) {
	c := startAPIServer(t).Client
	ref := testRef
	ref.Namespace = "clusters-sleep"
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}); err != nil {
		t.Fatal(err)
	}
	rt := New(c, testOptions())
	specs := testSpecs(3, 2)
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	replicas := func() map[string]int32 {
		out := map[string]int32{}
		deps := &appsv1.DeploymentList{}
		if err := c.List(t.Context(), deps, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, d := range deps.Items {
			out["Deployment/"+d.Name] = *d.Spec.Replicas
		}
		sts := &appsv1.StatefulSetList{}
		if err := c.List(t.Context(), sts, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range sts.Items {
			out["StatefulSet/"+s.Name] = *s.Spec.Replicas
		}
		return out
	}
	services := func() map[string]string {
		out := map[string]string{}
		list := &corev1.ServiceList{}
		if err := c.List(t.Context(), list, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			out[s.Name] = string(s.UID)
		}
		return out
	}
	awake, svcs := replicas(), services()
	if len(awake) < 3 || len(svcs) == 0 {
		t.Fatalf("applied workloads %v, services %v: want several", awake, svcs)
	}

	if err := rt.Sleep(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	for name, n := range replicas() {
		if n != 0 {
			t.Errorf("%s has %d replicas while asleep, want 0", name, n)
		}
	}
	for name, uid := range services() {
		if svcs[name] != uid {
			t.Errorf("Service %s was replaced while asleep", name)
		}
	}

	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	for name, n := range replicas() {
		if n != awake[name] {
			t.Errorf("%s has %d replicas after the next Apply, want %d", name, n, awake[name])
		}
	}
}
