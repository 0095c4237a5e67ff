package none

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/simulated"
	"hypershift.dev/internal/nodes/drain"
)

// An InPlace rollout of joined nodes, one step per reconcile (the planner
// is the simulated platform's, so both roll by the same rule):
//
//	cordon + drain a node (≤ maxUnavailable unavailable)
//	→ annotate its Node with the pool's version
//	→ its node daemon fetches that release and restarts kubelet and kube-proxy
//	→ the Node reports that kubeletVersion and Ready → uncordon
//
// A node's version, for the planner, is its annotation (what it was told
// to run) or else the kubelet version it reports, so a node being
// restarted is not drained again.

// inPlace says whether the pool upgrades its nodes in place.
func inPlace(np *hypershiftv1alpha1.NodePool) bool {
	return np.Spec.Management.UpgradeType == hypershiftv1alpha1.UpgradeTypeInPlace
}

// nodeVersions pairs the pool's nodes with the version each is set to run.
func nodeVersions(nodes map[string]*corev1.Node) []simulated.InPlaceNode {
	out := make([]simulated.InPlaceNode, 0, len(nodes))
	for name, n := range nodes {
		v := n.Annotations[hypershiftv1alpha1.NodeKubernetesVersionAnnotation]
		if v == "" {
			v = n.Status.NodeInfo.KubeletVersion
		}
		out = append(out, simulated.InPlaceNode{Name: name, Version: v, Node: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rollInPlace carries out one step of an InPlace rollout and reports it.
func rollInPlace(ctx context.Context, p *platform.Pool, now time.Time, report *platform.Report) error {
	nodes := nodeVersions(p.Nodes)
	rolling := false
	for _, n := range nodes {
		if n.Version != p.Version || n.Node.Status.NodeInfo.KubeletVersion != p.Version || drain.Draining(n.Node) {
			rolling = true
		}
	}
	if !rolling {
		return nil
	}
	toDrain, uncordon, err := simulated.PlanInPlace(p.NodePool.Spec.Management, len(nodes), nodes, p.Version)
	if err != nil {
		return err
	}
	for _, name := range uncordon {
		if err := drain.Uncordon(ctx, p.Cluster.Kube, p.Nodes[name]); err != nil {
			return err
		}
		p.Log.Info("in-place upgrade: node runs the new version, uncordoned", "node", name, "version", p.Version)
	}
	var draining []string
	for _, name := range toDrain {
		node := p.Nodes[name]
		res, err := drain.Node(ctx, p.Cluster.Kube, node, drainTimeout(p), now)
		if err != nil {
			return err
		}
		if !res.Done {
			draining = append(draining, name)
			report.Blocked += res.Blocked
			continue
		}
		if err := setNodeVersion(ctx, p, node); err != nil {
			return err
		}
		p.Log.Info("in-place upgrade: node drained, asking its node daemon for the new version", "node", name,
			"from", node.Status.NodeInfo.KubeletVersion, "to", p.Version)
	}
	report.Rollout = simulated.InPlaceMessage(p.Version, nodes, len(nodes), draining)
	report.Busy = true
	p.Requeue(2 * time.Second)
	return nil
}

// setNodeVersion annotates a drained Node with the pool's version.
func setNodeVersion(ctx context.Context, p *platform.Pool, node *corev1.Node) error {
	if node.Annotations[hypershiftv1alpha1.NodeKubernetesVersionAnnotation] == p.Version {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		hypershiftv1alpha1.NodeKubernetesVersionAnnotation: p.Version,
	}}})
	if _, err := p.Cluster.Kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotate node %s with version %s: %w", node.Name, p.Version, err)
	}
	return nil
}

// drainTimeout is spec.nodeDrainTimeout; zero waits as long as it takes.
func drainTimeout(p *platform.Pool) time.Duration {
	if p.NodePool.Spec.NodeDrainTimeout != nil {
		return p.NodePool.Spec.NodeDrainTimeout.Duration
	}
	return 0
}
