package nodepool

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/simulated"
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

func podNames(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return fmt.Sprint(out)
}

func TestPodsToDrain(t *testing.T) {
	yes := true
	pods := []corev1.Pod{
		pod("web"),
		pod("ds", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "x", Controller: &yes}}
		}),
		pod("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} }),
		pod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("leaving", terminating),
		pod("rs", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: &yes}}
		}),
	}
	if got := podNames(podsToDrain(pods, true)); got != "[web leaving rs]" {
		t.Errorf("on a Ready node: %s, want [web leaving rs]", got)
	}
	// Nobody finishes a terminating pod on a node that is not Ready.
	if got := podNames(podsToDrain(pods, false)); got != "[web rs]" {
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
			if got := podNames(evictionWave(tc.pods)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func node(name string, ready bool, annotations map[string]string) *corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

func TestScaleDownOrder(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(name string, age time.Duration) simulated.Machine {
		return simulated.Machine{Name: name, Created: metav1.NewTime(t0.Add(-age))}
	}
	machines := []simulated.Machine{
		m("old", 3*time.Hour), m("new", time.Minute), m("mid", time.Hour),
		m("sick", 2*time.Hour), m("unregistered", 4*time.Hour), m("draining", 5*time.Hour),
	}
	nodes := map[string]*corev1.Node{
		"old":      node("old", true, nil),
		"new":      node("new", true, nil),
		"mid":      node("mid", true, nil),
		"sick":     node("sick", false, nil),
		"draining": node("draining", true, map[string]string{drainStartedAnnotation: t0.Format(time.RFC3339)}),
	}
	var got []string
	for _, m := range scaleDownOrder(machines, nodes) {
		got = append(got, m.Name)
	}
	if fmt.Sprint(got) != "[draining unregistered sick new mid old]" {
		t.Errorf("order %v, want draining, unregistered, NotReady, then newest first", got)
	}
}

func TestUnhealthy(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(name string, age time.Duration) simulated.Machine {
		return simulated.Machine{Name: name, Created: metav1.NewTime(t0.Add(-age))}
	}
	notReadySince := func(name string, d time.Duration) *corev1.Node {
		n := node(name, false, nil)
		n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-d))
		return n
	}
	machines := []simulated.Machine{
		m("healthy", time.Hour), m("down-long", time.Hour), m("down-briefly", time.Hour),
		m("never-joined", 11*time.Minute), m("joining", time.Minute),
	}
	nodes := map[string]*corev1.Node{
		"healthy":      node("healthy", true, nil),
		"down-long":    notReadySince("down-long", 6*time.Minute),
		"down-briefly": notReadySince("down-briefly", 2*time.Minute),
	}
	bad, next := unhealthy(machines, nodes, t0)
	if fmt.Sprint(bad) != "[down-long never-joined]" {
		t.Errorf("replaced %v, want [down-long never-joined]", bad)
	}
	if want := t0.Add(3 * time.Minute); !next.Equal(want) {
		t.Errorf("next check at %s, want %s (down-briefly reaching 5 minutes)", next, want)
	}
}

func TestWithTaints(t *testing.T) {
	have := []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Value: "old", Effect: corev1.TaintEffectNoSchedule}}
	got, changed := withTaints(have, nil)
	if changed || len(got) != 2 {
		t.Errorf("no pool taints changed the node's: %v", got)
	}
	got, changed = withTaints(have, []hypershiftv1alpha1.Taint{{Key: "gpu", Value: "new", Effect: corev1.TaintEffectNoSchedule}, {Key: "spot", Effect: corev1.TaintEffectNoExecute}})
	if !changed || fmt.Sprint(got) != "[{node.kubernetes.io/unschedulable  NoSchedule <nil>} {gpu new NoSchedule <nil>} {spot  NoExecute <nil>}]" {
		t.Errorf("got %v (changed %v)", got, changed)
	}
}
