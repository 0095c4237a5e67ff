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

	obs := observe(s)
	np.Status.Replicas = s.machines.machines
	np.Status.Machines = nil
	if ms := s.machines.status; ms != nil {
		np.Status.Machines = ms.Machines
	}
	np.Status.ReadyReplicas = obs.ready
	switch {
	case len(obs.versions) == 1 && obs.otherVersions == 0:
		np.Status.Version = obs.versions[0]
	case len(obs.versions) == 0:
		np.Status.Version = s.version // no node runs another
	}
	setUpdatingVersion(s, obs.versions)
	setAllMachinesReady(s)
	if len(obs.unhealthy) > 0 {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllNodesHealthy, false, reasonNodesNotReady,
			fmt.Sprintf("%d of %d nodes are not %s: %s", len(obs.unhealthy), obs.nodes, obs.healthy, names(obs.unhealthy)))
	} else {
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllNodesHealthy, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("All %d nodes are %s", obs.nodes, obs.healthy))
	}
	setReady(s, obs.ready)
}

// observed is what the pool's status says of its nodes: how many are
// ready, which are not healthy, the versions they run.
type observed struct {
	ready int32
	// nodes counts the nodes whose health is reported and unhealthy
	// names those that are not; healthy is what the messages call it.
	nodes     int
	unhealthy []string
	healthy   string
	// versions are the distinct kubelet versions, sorted; otherVersions
	// counts those left out.
	versions      []string
	otherVersions int
}

// observe takes readiness and versions from what the platform's machines
// report of themselves (Cluster API's Machines), and from the pool's
// Nodes for platforms whose machines report nothing.
func observe(s *scope) observed {
	if ms := s.machines.status; ms != nil {
		return observed{
			ready: ms.Ready, nodes: int(ms.Registered), unhealthy: ms.Unhealthy, healthy: "healthy",
			versions: ms.Versions, otherVersions: ms.OtherVersions,
		}
	}
	obs := observed{nodes: len(s.nodes), healthy: "Ready"}
	seen := map[string]bool{}
	for name, node := range s.nodes {
		if nodeReady(node) {
			obs.ready++
		} else {
			obs.unhealthy = append(obs.unhealthy, name)
		}
		if v := node.Status.NodeInfo.KubeletVersion; v != "" && !seen[v] {
			seen[v] = true
			obs.versions = append(obs.versions, v)
		}
	}
	sort.Strings(obs.unhealthy)
	sort.Strings(obs.versions)
	return obs
}

// setAllMachinesReady says whether every machine has its node and, when
// the machines report it, is ready.
func setAllMachinesReady(s *scope) {
	np, gen, m := s.np, s.np.Generation, s.machines
	switch {
	case m.problem != "":
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, false, reasonAgentNotRunning, m.problem)
	case len(m.unregistered) > 0:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, false, reasonWaitingForNodes,
			fmt.Sprintf("%d of %d machines have no node yet: %s", len(m.unregistered), m.machines, names(m.unregistered)))
	case m.status == nil:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("All %d machines have registered their node", m.machines))
	case len(m.status.NotReady) > 0:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, false, reasonNodesNotReady,
			fmt.Sprintf("%d of %d machines are not Ready: %s", len(m.status.NotReady), m.status.Registered, names(m.status.NotReady)))
	default:
		conditions.Set(&np.Status.Conditions, gen, hypershiftv1alpha1.NodePoolAllMachinesReady, true, hypershiftv1alpha1.AsExpectedReason,
			fmt.Sprintf("All %d machines are Ready", m.status.Registered))
	}
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
//
// The versions are the Nodes', or the machines' when they report them
// (then the machines are counted, and versions left out named by number).
func setUpdatingVersion(s *scope, versions []string) {
	np := s.np
	set := func(status bool, reason hypershiftv1alpha1.ConditionReason, msg string) {
		conditions.Set(&np.Status.Conditions, np.Generation, hypershiftv1alpha1.NodePoolUpdatingVersion, status, reason, msg)
	}
	run, count, others := strings.Join(versions, ", "), fmt.Sprintf("%d nodes", len(s.nodes)), 0
	if ms := s.machines.status; ms != nil {
		count, others = fmt.Sprintf("%d machines", s.machines.machines), ms.OtherVersions
		if others > 0 {
			run += fmt.Sprintf(" and %d other versions", others)
		}
	}
	atVersion := others == 0 && (len(versions) == 0 || (len(versions) == 1 && versions[0] == s.version))
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
			run, s.version, s.version))
	case !atVersion:
		set(true, hypershiftv1alpha1.RollingOutReason, fmt.Sprintf("Nodes run %s, moving to %s", run, s.version))
	default:
		set(false, hypershiftv1alpha1.AsExpectedReason, fmt.Sprintf("All %s run %s", count, s.version))
	}
}
