package kube

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodsOfInstancesDuringARollout: a Deployment's instance is its newest
// live pod, so a new pod that crash-loops shows instead of the ready old
// one, and neither an evicted pod nor one being deleted stands for it.
func TestPodsOfInstancesDuringARollout(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	pod := func(name string, created time.Time, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			now := metav1.NewTime(created)
			p.DeletionTimestamp = &now
		}
		return p
	}
	w := &workload{component: "kube-apiserver", instances: []string{"kube-apiserver"}}
	for _, tt := range []struct {
		name string
		pods []*corev1.Pod
		want string
	}{
		{"old ready, new crash-looping", []*corev1.Pod{
			pod("kube-apiserver-a", t0, corev1.PodRunning, false),
			pod("kube-apiserver-z", t0.Add(time.Minute), corev1.PodRunning, false),
		}, "kube-apiserver-z"},
		{"new listed first", []*corev1.Pod{
			pod("kube-apiserver-z", t0.Add(time.Minute), corev1.PodRunning, false),
			pod("kube-apiserver-a", t0, corev1.PodRunning, false),
		}, "kube-apiserver-z"},
		{"newest evicted", []*corev1.Pod{
			pod("kube-apiserver-b", t0, corev1.PodRunning, false),
			pod("kube-apiserver-a", t0.Add(time.Minute), corev1.PodFailed, false),
		}, "kube-apiserver-b"},
		{"newest being deleted", []*corev1.Pod{
			pod("kube-apiserver-b", t0, corev1.PodRunning, false),
			pod("kube-apiserver-a", t0.Add(time.Minute), corev1.PodRunning, true),
		}, "kube-apiserver-b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := podsOfInstances(w, tt.pods)
			if len(got) != 1 || got[0] == nil || got[0].Name != tt.want {
				t.Errorf("instance's pod %v, want %s", got, tt.want)
			}
		})
	}
}
