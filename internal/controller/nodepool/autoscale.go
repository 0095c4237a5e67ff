package nodepool

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"hypershift.dev/internal/nodes/drain"
)

// Autoscaling thresholds, after cluster-autoscaler's defaults.
const (
	// scaleDownUnneededTime: a node without pods (besides DaemonSet, mirror
	// and finished ones) this long is removed.
	scaleDownUnneededTime = 10 * time.Minute
	// scaleDownDelayAfterAdd: no node is removed this soon after the pool
	// grew.
	scaleDownDelayAfterAdd = 10 * time.Minute
)

// autoscalerState is what autoscaling remembers between reconciles. It is
// lost when the operator restarts, which only delays a scale-down.
type autoscalerState struct {
	mu          sync.Mutex
	lastScaleUp map[types.NamespacedName]time.Time
	emptySince  map[types.UID]time.Time
}

func (a *autoscalerState) init() {
	if a.lastScaleUp == nil {
		a.lastScaleUp = map[types.NamespacedName]time.Time{}
		a.emptySince = map[types.UID]time.Time{}
	}
}

// autoscale sizes a pool with spec.autoScaling. It grows the pool while
// pods that would fit its nodes cannot be scheduled, by as many nodes as
// their requests need, once the nodes it has are all Ready (new nodes get
// their chance at those pods first). It shrinks the pool by the nodes that
// stayed empty for scaleDownUnneededTime, cordoning them so they are the
// ones to go. Always within [min, max].
func (r *Reconciler) autoscale(ctx context.Context, s *scope) (int32, error) {
	as := s.np.Spec.AutoScaling
	current := min(max(s.np.Status.Replicas, as.Min), as.Max)
	if !s.platform.supportsAutoscaling() {
		return current, nil // the platform cannot add machines
	}
	s.hosted.autoscaled.Store(s.np.Name, true)
	pods, err := s.hosted.podCache(ctx)
	if err != nil {
		return current, err
	}
	key := types.NamespacedName{Namespace: s.np.Namespace, Name: s.np.Name}
	now := r.now()
	r.scaling.mu.Lock()
	defer r.scaling.mu.Unlock()
	r.scaling.init()

	template := s.platform.nodeTemplate(s.np)
	pending := fittingPending(podsOn(pods, ""), template.Labels, template.Taints, template.Capacity, s.log)
	settled := int32(len(s.nodes)) == current //nolint:gosec // node counts fit in int32
	for _, n := range s.nodes {
		settled = settled && drain.NodeReady(n) && !drain.Draining(n)
	}
	if len(pending) > 0 {
		if !settled || current >= as.Max {
			return current, nil
		}
		want := min(as.Max, current+nodesNeeded(pending, template.Capacity))
		r.scaling.lastScaleUp[key] = now
		s.log.Info("autoscaling up: pods cannot be scheduled", "pending", len(pending), "from", current, "to", want)
		return want, nil
	}

	if current <= as.Min || now.Sub(r.scaling.lastScaleUp[key]) < scaleDownDelayAfterAdd {
		return current, nil
	}
	unneeded, next := unneededNodes(s.nodes, func(n *corev1.Node) bool { return busy(pods, n) }, r.scaling.emptySince, now)
	if !next.IsZero() {
		s.requeueBy(next.Sub(now))
	}
	remove := min(int32(len(unneeded)), current-as.Min) //nolint:gosec // node counts fit in int32
	for _, n := range unneeded[:remove] {
		if _, err := drain.Cordon(ctx, s.hosted.kube, n, now); err != nil {
			return current, err
		}
		delete(r.scaling.emptySince, n.UID)
	}
	if remove > 0 {
		s.log.Info("autoscaling down: nodes stayed empty", "nodes", remove, "for", scaleDownUnneededTime.String(), "from", current, "to", current-remove)
	}
	return current - remove, nil
}

// unneededNodes returns the nodes that have been empty, Ready and not
// draining for scaleDownUnneededTime, by name, recording in emptySince when
// each was first seen empty (and forgetting nodes that are not); next is
// when the next one becomes unneeded.
func unneededNodes(nodes map[string]*corev1.Node, busy func(*corev1.Node) bool, emptySince map[types.UID]time.Time, now time.Time) (unneeded []*corev1.Node, next time.Time) {
	for _, n := range sortedNodes(nodes) {
		if drain.Draining(n) || !drain.NodeReady(n) || busy(n) {
			delete(emptySince, n.UID)
			continue
		}
		since, ok := emptySince[n.UID]
		if !ok {
			emptySince[n.UID], since = now, now
		}
		if due := since.Add(scaleDownUnneededTime); now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		unneeded = append(unneeded, n)
	}
	return unneeded, next
}

func sortedNodes(nodes map[string]*corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// busy says whether a node runs a pod that a drain would wait for.
func busy(pods cache.Indexer, node *corev1.Node) bool {
	for _, p := range podsOn(pods, node.Name) {
		if drain.MustDrain(p, true) {
			return true
		}
	}
	return false
}

// unschedulable says whether the scheduler gave up on a pod for now.
func unschedulable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodPending {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// fittingPending are the unschedulable pods a new node of the pool could
// run: its labels satisfy their nodeSelector, they tolerate its taints, and
// their requests fit its capacity. Pods with required node affinity are not
// evaluated and never cause a scale-up.
func fittingPending(pending []*corev1.Pod, labels map[string]string, taints []corev1.Taint, capacity corev1.ResourceList, log logr.Logger) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pending {
		if !unschedulable(p) {
			continue
		}
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			continue
		}
		fits := true
		for k, v := range p.Spec.NodeSelector {
			fits = fits && labels[k] == v
		}
		for i := range taints {
			t := &taints[i]
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				continue
			}
			tolerated := false
			for j := range p.Spec.Tolerations {
				tolerated = tolerated || p.Spec.Tolerations[j].ToleratesTaint(log, t, false)
			}
			fits = fits && tolerated
		}
		req := requests(p)
		for name, q := range req {
			if c, ok := capacity[name]; ok && q.Cmp(c) > 0 {
				fits = false
			}
		}
		if fits {
			out = append(out, p)
		}
	}
	return out
}

// nodesNeeded is how many new nodes of the given capacity the pods need:
// first-fit decreasing packing of their requests (CPU, memory, one pod slot
// each), at least one. Every pod fits an empty node (fittingPending).
func nodesNeeded(pods []*corev1.Pod, capacity corev1.ResourceList) int32 {
	type load struct{ cpu, mem int64 }
	loads := make([]load, 0, len(pods))
	for _, p := range pods {
		r := requests(p)
		loads = append(loads, load{cpu: r.Cpu().MilliValue(), mem: r.Memory().Value()})
	}
	sort.Slice(loads, func(i, j int) bool {
		if loads[i].cpu != loads[j].cpu {
			return loads[i].cpu > loads[j].cpu
		}
		return loads[i].mem > loads[j].mem
	})
	type bin struct {
		cpu, mem int64
		pods     int64
	}
	capCPU, capMem, capPods := capacity.Cpu().MilliValue(), capacity.Memory().Value(), capacity.Pods().Value()
	var bins []bin
	for _, l := range loads {
		placed := false
		for i := range bins {
			b := &bins[i]
			if b.cpu+l.cpu <= capCPU && b.mem+l.mem <= capMem && b.pods < capPods {
				b.cpu, b.mem, b.pods = b.cpu+l.cpu, b.mem+l.mem, b.pods+1
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, bin{cpu: l.cpu, mem: l.mem, pods: 1})
		}
	}
	return int32(max(len(bins), 1)) //nolint:gosec // bounded by the number of pods
}

// requests sums a pod's container requests.
func requests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}
