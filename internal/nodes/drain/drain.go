// Package drain cordons a node and evicts its pods through the Eviction
// API, the way `kubectl drain --ignore-daemonsets` does, one step per call
// so a controller can drive it across reconciles.
package drain

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// StartedAnnotation marks a Node being drained for removal, with the
// time the drain started (RFC 3339).
const StartedAnnotation = "hypershift.dev/drain-started"

// MirrorPodAnnotation marks a static pod's mirror, which eviction cannot
// remove.
const MirrorPodAnnotation = "kubernetes.io/config.mirror"

// Result is where a node's drain stands.
type Result struct {
	// done: nothing is left to evict, or the drain timed out.
	Done bool
	// remaining pods to drain; blocked of them by a PodDisruptionBudget.
	Remaining, Blocked int
	TimedOut           bool
}

// Node cordons node and evicts its pods through the Eviction API, so
// PodDisruptionBudgets are honoured — lowest priority first, the next
// priority only once the lower ones are gone (system-critical pods leave
// last). It does not wait: call it again until done. timeout bounds the
// whole drain, counted from the cordon; zero waits as long as it takes
// (HyperShift's nodeDrainTimeout semantics).
func Node(ctx context.Context, kube kubernetes.Interface, node *corev1.Node, timeout time.Duration, now time.Time) (Result, error) {
	started, err := Cordon(ctx, kube, node, now)
	if err != nil {
		return Result{}, err
	}
	list, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node.Name).String(),
	})
	if err != nil {
		return Result{}, fmt.Errorf("list pods of node %s: %w", node.Name, err)
	}
	pods := PodsToDrain(list.Items, NodeReady(node))
	res := Result{Remaining: len(pods)}
	if len(pods) == 0 {
		res.Done = true
		return res, nil
	}
	if timeout > 0 && now.Sub(started) > timeout {
		res.Done, res.TimedOut = true, true
		return res, nil
	}
	for _, p := range evictionWave(pods) {
		err := kube.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
		})
		switch {
		case err == nil, apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			res.Blocked++ // a PodDisruptionBudget says not now
		default:
			return res, fmt.Errorf("evict pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	return res, nil
}

// Cordon marks node unschedulable and records when its drain started; it
// returns that time.
func Cordon(ctx context.Context, kube kubernetes.Interface, node *corev1.Node, now time.Time) (time.Time, error) {
	if ts, ok := node.Annotations[StartedAnnotation]; ok && node.Spec.Unschedulable {
		if started, err := time.Parse(time.RFC3339, ts); err == nil {
			return started, nil
		}
	}
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{StartedAnnotation: now.UTC().Format(time.RFC3339)}},
		"spec":     map[string]any{"unschedulable": true},
	}
	if err := patchNode(ctx, kube, node.Name, patch); err != nil {
		return now, fmt.Errorf("cordon node %s: %w", node.Name, err)
	}
	return now, nil
}

// Uncordon undoes Cordon, for a node that no longer has to go.
func Uncordon(ctx context.Context, kube kubernetes.Interface, node *corev1.Node) error {
	patch := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{StartedAnnotation: nil}},
		"spec":     map[string]any{"unschedulable": false},
	}
	if err := patchNode(ctx, kube, node.Name, patch); err != nil {
		return fmt.Errorf("uncordon node %s: %w", node.Name, err)
	}
	return nil
}

func patchNode(ctx context.Context, kube kubernetes.Interface, name string, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Draining reports whether a node is being drained for removal.
func Draining(node *corev1.Node) bool {
	_, ok := node.Annotations[StartedAnnotation]
	return ok
}

// PodsToDrain are the pods a drain has to see gone, as `kubectl drain
// --ignore-daemonsets` counts them: not DaemonSet pods (their controller
// would put them back; they go with the Node), not mirror pods, not
// finished ones — and, on a node that is not Ready, not those already
// terminating: no kubelet is there to finish them (Cluster API skips them
// on unreachable nodes too); the pod garbage collector removes them once
// the Node is gone.
func PodsToDrain(pods []corev1.Pod, nodeIsReady bool) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		if MustDrain(&pods[i], nodeIsReady) {
			out = append(out, &pods[i])
		}
	}
	return out
}

// MustDrain says whether a drain waits for p to be gone (see PodsToDrain).
func MustDrain(p *corev1.Pod, nodeIsReady bool) bool {
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return false
	case !nodeIsReady && p.DeletionTimestamp != nil:
		return false
	case p.Annotations[MirrorPodAnnotation] != "":
		return false
	default:
		return !ownedByDaemonSet(p)
	}
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// evictionWave picks the pods to evict now: those of the lowest priority
// still present, unless some of them are already terminating (then they are
// waited for). Higher priorities follow once the lower ones are gone.
func evictionWave(pods []*corev1.Pod) []*corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	lowest := priority(pods[0])
	for _, p := range pods[1:] {
		lowest = min(lowest, priority(p))
	}
	var wave []*corev1.Pod
	for _, p := range pods {
		if priority(p) == lowest && p.DeletionTimestamp == nil {
			wave = append(wave, p)
		}
	}
	sort.Slice(wave, func(i, j int) bool {
		if wave[i].Namespace != wave[j].Namespace {
			return wave[i].Namespace < wave[j].Namespace
		}
		return wave[i].Name < wave[j].Name
	})
	return wave
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// NodeReady reports whether a Node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
