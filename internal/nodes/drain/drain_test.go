package drain

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hypershift.dev/internal/nodes/nodetest"
)

func pod(name string, edit ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, e := range edit {
		e(&p)
	}
	return p
}

func withPriority(v int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}

func TestPodsToDrain(t *testing.T) {
	yes := true
	pods := []corev1.Pod{
		pod("web"),
		pod("ds", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: &yes}}
		}),
		pod("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{MirrorPodAnnotation: "x"} }),
		pod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("leaving", terminating),
		pod("rs", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: &yes}}
		}),
	}
	if got := nodetest.PodNames(PodsToDrain(pods, true)); got != "[web leaving rs]" {
		t.Errorf("on a Ready node: %s, want [web leaving rs]", got)
	}
	// Nobody finishes a terminating pod on a node that is not Ready.
	if got := nodetest.PodNames(PodsToDrain(pods, false)); got != "[web rs]" {
		t.Errorf("on a NotReady node: %s, want [web rs]", got)
	}
}

func TestEvictionWave(t *testing.T) {
	ptr := func(p corev1.Pod) *corev1.Pod { return &p }
	cases := []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{"nothing", nil, "[]"},
		{"all of the same priority at once", []*corev1.Pod{ptr(pod("b")), ptr(pod("a"))}, "[a b]"},
		{"lowest priority first", []*corev1.Pod{
			ptr(pod("dns", withPriority(2000000000))), ptr(pod("batch", withPriority(-10))), ptr(pod("web")),
		}, "[batch]"},
		{"wait for the lower ones to be gone", []*corev1.Pod{
			ptr(pod("batch", withPriority(-10), terminating)), ptr(pod("web")),
		}, "[]"},
		{"terminating pods are not evicted again", []*corev1.Pod{
			ptr(pod("a", terminating)), ptr(pod("b")),
		}, "[b]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodetest.PodNames(evictionWave(tc.pods)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}
