package kube

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestFenceScalesWritersToZeroAndApplyBack: a fence scales every
// Deployment to 0 and leaves etcd's StatefulSet, the Services (with their
// node ports) and the Secrets as they are; it reports the writers left
// until their Deployments are scaled down and their last pod is gone, a
// terminating one included, while etcd's pod does not count; the next
// Apply brings the replicas back. Nothing runs controllers here: the test
// writes the Deployments' status and the pods itself.
func TestFenceScalesWritersToZeroAndApplyBack(t *testing.T) {
	c := startAPIServer(t).Client
	ctx := t.Context()
	ref := testRef
	ref.Namespace = "clusters-fence"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}); err != nil {
		t.Fatal(err)
	}
	// No controller manager makes it here; pods need it.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ref.Namespace}}
	if err := c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	rt := New(c, testOptions())
	specs := testSpecs(1, 2)
	if err := rt.Apply(ctx, ref, specs); err != nil {
		t.Fatal(err)
	}
	replicas := func() map[string]int32 {
		out := map[string]int32{}
		deps := &appsv1.DeploymentList{}
		if err := c.List(ctx, deps, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, d := range deps.Items {
			out["Deployment/"+d.Name] = *d.Spec.Replicas
		}
		sts := &appsv1.StatefulSetList{}
		if err := c.List(ctx, sts, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range sts.Items {
			out["StatefulSet/"+s.Name] = *s.Spec.Replicas
		}
		return out
	}
	// kept: the UID and node ports of every Service and Secret.
	kept := func() map[string]string {
		out := map[string]string{}
		svcs := &corev1.ServiceList{}
		if err := c.List(ctx, svcs, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range svcs.Items {
			v := string(s.UID)
			for _, p := range s.Spec.Ports {
				v += " " + p.Name + "=" + strconv.Itoa(int(p.NodePort))
			}
			out["Service/"+s.Name] = v
		}
		secrets := &corev1.SecretList{}
		if err := c.List(ctx, secrets, client.InNamespace(ref.Namespace)); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			out["Secret/"+s.Name] = string(s.UID)
		}
		return out
	}
	awake, before := replicas(), kept()
	if awake["Deployment/kube-apiserver"] != 2 || awake["StatefulSet/etcd"] != 1 {
		t.Fatalf("applied %v: want 2 API servers and 1 etcd member", awake)
	}
	pod := func(name, component string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ref.Namespace, Name: name,
				Labels: map[string]string{ControlPlaneLabel: ref.Name, ComponentLabel: component},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: component, Image: "hypershift.dev/hypershift:test"}}},
		}
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod("etcd-0", "etcd")
	apiServer := pod("kube-apiserver-1", "kube-apiserver")

	left, err := rt.Fence(ctx, ref, specs)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range replicas() {
		want := int32(0)
		if strings.HasPrefix(name, "StatefulSet/") {
			want = awake[name]
		}
		if n != want {
			t.Errorf("%s has %d replicas while fenced, want %d", name, n, want)
		}
	}
	if got := kept(); !maps.Equal(got, before) {
		t.Errorf("Services and Secrets changed by the fence:\nbefore %v\nafter  %v", before, got)
	}
	for _, want := range []string{"Deployment kube-apiserver is not scaled down yet", "pod kube-apiserver-1 is"} {
		if !slices.ContainsFunc(left, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("left %q: want %q", left, want)
		}
	}
	if slices.ContainsFunc(left, func(s string) bool { return strings.Contains(s, "etcd") }) {
		t.Errorf("left %q names etcd, which keeps running", left)
	}

	// The Deployment controller's part: every Deployment scaled down.
	deps := &appsv1.DeploymentList{}
	if err := c.List(ctx, deps, client.InNamespace(ref.Namespace)); err != nil {
		t.Fatal(err)
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		d.Status.ObservedGeneration, d.Status.Replicas = d.Generation, 0
		if err := c.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	// A pod being deleted still runs its API server until it exits.
	apiServer.Finalizers = []string{"hypershift.dev/test-holds-it"}
	if err := c.Update(ctx, apiServer); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, apiServer); err != nil {
		t.Fatal(err)
	}
	if left, err = rt.Fence(ctx, ref, specs); err != nil {
		t.Fatal(err)
	}
	if want := []string{"pod kube-apiserver-1 is terminating"}; !slices.Equal(left, want) {
		t.Errorf("left %q, want %q", left, want)
	}
	apiServer.Finalizers = nil
	if err := c.Get(ctx, client.ObjectKeyFromObject(apiServer), apiServer); err != nil {
		t.Fatal(err)
	}
	apiServer.Finalizers = nil
	if err := c.Update(ctx, apiServer); err != nil {
		t.Fatal(err)
	}
	if left, err = rt.Fence(ctx, ref, specs); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("left %q with only etcd's pod running, want nothing", left)
	}

	if err := rt.Apply(ctx, ref, specs); err != nil {
		t.Fatal(err)
	}
	for name, n := range replicas() {
		if n != awake[name] {
			t.Errorf("%s has %d replicas once the fence is lifted, want %d", name, n, awake[name])
		}
	}
	if got := kept(); !maps.Equal(got, before) {
		t.Errorf("Services and Secrets changed by lifting the fence:\nbefore %v\nafter  %v", before, got)
	}
}
