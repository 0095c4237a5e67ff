package nodepool

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hypershift.dev/internal/nodes/nodetest"
	"hypershift.dev/internal/nodes/simulated"
)

func pendingPod(name string, edit ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
	for _, e := range edit {
		e(p)
	}
	return p
}

func cpu(v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
}

func TestFittingPending(t *testing.T) {
	labels := map[string]string{"hypershift.dev/nodepool": "auto", "tier": "batch"}
	taints := []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}, {Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}}
	tolerates := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	}
	pods := []*corev1.Pod{
		pendingPod("fits", tolerates, cpu("2")),
		pendingPod("intolerant", cpu("1")),
		pendingPod("selector-ok", tolerates, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"tier": "batch"} }),
		pendingPod("selector-other", tolerates, func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"tier": "web"} }),
		pendingPod("too-big", tolerates, cpu("9")),
		pendingPod("affinity", tolerates, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}),
		pendingPod("not-yet-tried", tolerates, func(p *corev1.Pod) { p.Status.Conditions = nil }),
	}
	got := fittingPending(pods, labels, taints, simulated.DefaultCapacity(), logr.Discard())
	if names := nodetest.PodNames(got); names != "[fits selector-ok]" {
		t.Errorf("fitting pods %s, want [fits selector-ok]", names)
	}
}

func TestNodesNeeded(t *testing.T) {
	capacity := simulated.DefaultCapacity() // 8 CPU, 32Gi, 110 pods
	many := func(n int, edit ...func(*corev1.Pod)) []*corev1.Pod {
		var out []*corev1.Pod
		for range n {
			out = append(out, pendingPod("p", edit...))
		}
		return out
	}
	cases := []struct {
		name string
		pods []*corev1.Pod
		want int32
	}{
		{"one small pod", many(1), 1},
		{"CPU: 3 × 5 CPU on 8-CPU nodes", many(3, cpu("5")), 3},
		{"CPU: 4 × 4 CPU pack two per node", many(4, cpu("4")), 2},
		{"nothing pending", nil, 1},
		{"pod count: 111 pods of nothing", many(111), 2},
		{"memory", many(2, func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("20Gi")}
		}), 2},
	}
	for _, tc := range cases {
		if got := nodesNeeded(tc.pods, capacity); got != tc.want {
			t.Errorf("%s: %d nodes, want %d", tc.name, got, tc.want)
		}
	}
}

func TestUnneededNodes(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(name string, ready bool) *corev1.Node {
		n := nodetest.Node(name, ready, nil)
		n.UID = types.UID(name)
		return n
	}
	nodes := map[string]*corev1.Node{"a": mk("a", true), "b": mk("b", true), "c": mk("c", true), "sick": mk("sick", false)}
	busyNodes := map[string]bool{"c": true}
	isBusy := func(n *corev1.Node) bool { return busyNodes[n.Name] }
	since := map[types.UID]time.Time{}

	got, next := unneededNodes(nodes, isBusy, since, t0)
	if len(got) != 0 || !next.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("first look: %v next %s, want none until t0+10m", got, next)
	}
	// b gets a pod for a while: its clock restarts.
	busyNodes["b"] = true
	unneededNodes(nodes, isBusy, since, t0.Add(5*time.Minute))
	busyNodes["b"] = false
	got, next = unneededNodes(nodes, isBusy, since, t0.Add(10*time.Minute))
	var names []string
	for _, n := range got {
		names = append(names, n.Name)
	}
	if fmt.Sprint(names) != "[a]" || !next.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("after 10 minutes: %v next %s, want [a] and b at t0+20m", names, next)
	}
	if _, ok := since["sick"]; ok {
		t.Error("a NotReady node is tracked as empty")
	}
}
