package nodepool

import (
	"fmt"
	"sort"
	"strings"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
)

// updateStatus reports the pool's machines and nodes. Phases that stopped
// early (no hosted cluster yet) already set Ready=False with the reason.
func (r *Reconciler) updateStatus(s *scope) {
	np := s.np
	gen := np.Generation
	if as := np.Spec.AutoScaling; as != nil {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAutoscalingEnabled, true,
			reasonEnabled, fmt.Sprintf("Between %d and %d nodes", as.Min, as.Max))
	} else {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAutoscalingEnabled, false,
			reasonDisabled, "spec.autoScaling is not set")
	}
	if np.Spec.Management.AutoRepair {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAutorepairEnabled, true,
			reasonEnabled, fmt.Sprintf("Nodes NotReady for %s, or not registered %s after creation, are replaced", unhealthyNodeTimeout, nodeStartupTimeout))
	} else {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAutorepairEnabled, false,
			reasonDisabled, "spec.management.autoRepair is false")
	}
	if s.hosted == nil {
		return
	}

	var ready int32
	var notReady, versions []string
	seen := map[string]bool{}
	for name, node := range s.nodes {
		if nodeReady(node) {
			ready++
		} else {
			notReady = append(notReady, name)
		}
		if v := node.Status.NodeInfo.KubeletVersion; v != "" && !seen[v] {
			seen[v] = true
			versions = append(versions, v)
		}
	}
	sort.Strings(notReady)
	sort.Strings(versions)
	np.Status.Replicas = s.machines.machines
	np.Status.ReadyReplicas = ready
	switch {
	case len(versions) == 1:
		np.Status.Version = versions[0]
	case len(versions) == 0:
		np.Status.Version = s.version // no node runs another
	}
	setUpdatingVersion(s, versions)

	switch {
	case s.machines.problem != "":
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, false, reasonAgentNotRunning, s.machines.problem)
	case len(s.machines.unregistered) > 0:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, false, reasonWaitingForNodes,
			fmt.Sprintf("%d of %d machines have no node yet: %s", len(s.machines.unregistered), s.machines.machines, names(s.machines.unregistered)))
	default:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("All %d machines have registered their node", s.machines.machines))
	}
	if len(notReady) > 0 {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllNodesHealthy, false, reasonNodesNotReady,
			fmt.Sprintf("%d of %d nodes are not Ready: %s", len(notReady), len(s.nodes), names(notReady)))
	} else {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllNodesHealthy, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("All %d nodes are Ready", len(s.nodes)))
	}
	setReady(s, ready)
}

// setReady says whether the pool has the nodes it wants, Ready.
func setReady(s *scope, ready int32) {
	np, gen, want := s.np, s.np.Generation, s.want
	switch {
	case s.machines.problem != "":
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolReady, false, reasonAgentNotRunning, s.machines.problem)
	case len(s.machines.draining) > 0:
		msg := fmt.Sprintf("Draining %s before removal (%d Ready, %d wanted)", names(s.machines.draining), ready, want)
		if s.machines.blocked > 0 {
			msg += fmt.Sprintf("; %d evictions refused by PodDisruptionBudgets, retrying", s.machines.blocked)
		}
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolReady, false, reasonScalingDown, msg)
	case s.machines.rollout != "" && ready >= want:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolReady, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("%d of %d nodes Ready; %s", min(ready, want), want, s.machines.rollout))
	case ready != want || s.machines.machines != want:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolReady, false, reasonWaitingForNodes,
			fmt.Sprintf("%d of %d nodes Ready", ready, want))
	default:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolReady, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("%d of %d nodes Ready", ready, want))
	}
}

// names lists up to five names, then how many more.
func names(list []string) string {
	const shown = 5
	if len(list) <= shown {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:shown], ", "), len(list)-shown)
}

// setUpdatingVersion reports a version rollout: True while the platform
// rolls one, False when every node runs the pool's version, when the
// version cannot be rolled out (the reason says why), or when the
// platform does not upgrade nodes and some run another version.
func setUpdatingVersion(s *scope, versions []string) {
	np := s.np
	set := func(status bool, reason hypershiftv1alpha1.ConditionReason, msg string) {
		conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.NodePoolUpdatingVersion, status, reason, msg)
	}
	atVersion := len(versions) == 0 || (len(versions) == 1 && versions[0] == s.version)
	switch {
	case s.versionProblem != "":
		set(false, hypershiftv1alpha1.UnsupportedVersionSkewReason, s.versionProblem)
	case s.machines.rollout != "":
		msg := s.machines.rollout
		if s.machines.blocked > 0 {
			msg += fmt.Sprintf("; %d evictions refused by PodDisruptionBudgets, retrying", s.machines.blocked)
		}
		set(true, hypershiftv1alpha1.RollingOutReason, msg)
	case !atVersion && !s.platform.upgradesNodes(np):
		set(false, hypershiftv1alpha1.UnsupportedReason, fmt.Sprintf(
			"Nodes run %s, spec.kubernetesVersion is %s: this platform does not upgrade nodes; join them again with a kubelet of %s",
			strings.Join(versions, ", "), s.version, s.version))
	case !atVersion:
		set(true, hypershiftv1alpha1.RollingOutReason, fmt.Sprintf("Nodes run %s, moving to %s", strings.Join(versions, ", "), s.version))
	default:
		set(false, hypershiftv1alpha1.AsExpectedReason, fmt.Sprintf("All %d nodes run %s", len(s.nodes), s.version))
	}
}
