package simulated

import (
	corev1 "k8s.io/api/core/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	simagent "hypershift.dev/internal/nodes/simulated"
)

// InPlaceNode is a node of a pool whose nodes are not this platform's
// machines (platform None): the version it is set to run, and its Node.
type InPlaceNode struct {
	Name    string
	Version string
	Node    *corev1.Node
}

// PlanInPlace is the InPlace planner (planInPlace, with maxUnavailable of
// spec.management resolved for a pool of want nodes) for nodes that are not
// simulated machines, so every platform rolls in place by the same rule:
// drain names nodes to drain (once drained, they are set to target);
// uncordon names drained nodes that run target again.
func PlanInPlace(m hypershiftv1alpha1.NodePoolManagement, want int, nodes []InPlaceNode, target string) (drain, uncordon []string, err error) {
	limits, err := limitsOf(m, want)
	if err != nil {
		return nil, nil, err
	}
	limits.inPlace = true
	if limits.maxUnavailable < 1 {
		limits.maxUnavailable = 1
	}
	plan := planInPlace(inPlaceStates(nodes), target, limits)
	return plan.drain, plan.uncordon, nil
}

// InPlaceMessage says where an InPlace rollout of such nodes stands.
func InPlaceMessage(target string, nodes []InPlaceNode, want int, draining []string) string {
	return rolloutMessage(hypershiftv1alpha1.UpgradeTypeInPlace, target, inPlaceStates(nodes), want, draining)
}

func inPlaceStates(nodes []InPlaceNode) []machineState {
	machines := make([]simagent.Machine, 0, len(nodes))
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		machines = append(machines, simagent.Machine{Name: n.Name, KubeletVersion: n.Version})
		byName[n.Name] = n.Node
	}
	return statesOf(machines, byName)
}
