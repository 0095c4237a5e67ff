package simulated

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/drain"
	simagent "hypershift.dev/internal/nodes/simulated"
)

// A version rollout moves a pool's machines to the pool's version, a few at
// a time:
//
//	Replace:  add a machine at the new version (≤ maxSurge beyond the size)
//	          → its node Ready → cordon + drain an old node (only while
//	          ≥ size−maxUnavailable nodes stay available) → remove it
//	InPlace:  cordon + drain an old node (≤ maxUnavailable unavailable)
//	          → set its machine's version (the agent restarts the node)
//	          → node Ready at the new version → uncordon
//
// A node is available when it is Ready and schedulable. The planners below
// are pure: they decide from the machines and their nodes what to do next,
// and are called again on every reconcile.

// rolloutLimits are a pool's rollout bounds, in nodes.
type rolloutLimits struct {
	inPlace        bool
	maxSurge       int
	maxUnavailable int
}

// limitsOf resolves spec.management's bounds for a pool of want nodes:
// Replace maxSurge 1 (percentages round up) and maxUnavailable 0 (round
// down), both zero → maxUnavailable 1 as a Deployment does; InPlace
// maxUnavailable 1, at least 1.
func limitsOf(m hypershiftv1alpha1.NodePoolManagement, want int) (rolloutLimits, error) {
	scaled := func(field string, v *intstr.IntOrString, def int, up bool) (int, error) {
		if v == nil {
			return def, nil
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(v, want, up)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s %s: want a non-negative number or a percentage", field, v.String())
		}
		return n, nil
	}
	if m.UpgradeType == hypershiftv1alpha1.UpgradeTypeInPlace {
		var v *intstr.IntOrString
		if m.InPlace != nil {
			v = m.InPlace.MaxUnavailable
		}
		n, err := scaled("spec.management.inPlace.maxUnavailable", v, hypershiftv1alpha1.DefaultInPlaceMaxUnavailable, false)
		return rolloutLimits{inPlace: true, maxUnavailable: max(n, 1)}, err
	}
	var surge, unavailable *intstr.IntOrString
	if m.Replace != nil && m.Replace.RollingUpdate != nil {
		surge, unavailable = m.Replace.RollingUpdate.MaxSurge, m.Replace.RollingUpdate.MaxUnavailable
	}
	s, err := scaled("spec.management.replace.rollingUpdate.maxSurge", surge, hypershiftv1alpha1.DefaultReplaceMaxSurge, true)
	if err != nil {
		return rolloutLimits{}, err
	}
	u, err := scaled("spec.management.replace.rollingUpdate.maxUnavailable", unavailable, hypershiftv1alpha1.DefaultReplaceMaxUnavailable, false)
	if err != nil {
		return rolloutLimits{}, err
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return rolloutLimits{maxSurge: s, maxUnavailable: u}, nil
}

// machineState is what the planners know of one machine.
type machineState struct {
	name    string
	version string // the version its machine is set to run
	node    *corev1.Node
}

func (m machineState) draining() bool { return m.node != nil && drain.Draining(m.node) }

// available: Ready and schedulable.
func (m machineState) available() bool {
	return m.node != nil && drain.NodeReady(m.node) && !m.node.Spec.Unschedulable
}

// runs says whether the node reports version and is Ready.
func (m machineState) runs(version string) bool {
	return m.node != nil && drain.NodeReady(m.node) && m.node.Status.NodeInfo.KubeletVersion == version
}

// statesOf pairs machines (whose KubeletVersion is set, see withVersions)
// with their nodes, by name.
func statesOf(machines []simagent.Machine, nodes map[string]*corev1.Node) []machineState {
	out := make([]machineState, 0, len(machines))
	for _, m := range machines {
		out = append(out, machineState{name: m.Name, version: m.KubeletVersion, node: nodes[m.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// replacePlan is the next step of a Replace rollout.
type replacePlan struct {
	// add is how many machines to add at the new version.
	add int
	// drain names old machines to drain and then remove.
	drain []string
}

// planReplace adds new machines while the pool stays within want+maxSurge
// and has fewer than want new ones, and drains old machines: those already
// draining, those whose node is not available (removing them costs no
// availability), and available ones only while at least want−maxUnavailable
// other nodes stay available.
func planReplace(states []machineState, target string, want int, l rolloutLimits) replacePlan {
	var plan replacePlan
	newCount, available := 0, 0
	var oldAvailable []string
	for _, m := range states {
		if m.version == target {
			newCount++
		}
		switch {
		case m.version == target:
			if m.available() {
				available++
			}
		case m.draining() || !m.available():
			plan.drain = append(plan.drain, m.name)
		default:
			available++
			oldAvailable = append(oldAvailable, m.name)
		}
	}
	plan.add = max(min(want+l.maxSurge-len(states), want-newCount), 0)
	budget := available - (want - l.maxUnavailable)
	for _, name := range oldAvailable {
		if budget <= 0 {
			break
		}
		plan.drain = append(plan.drain, name)
		budget--
	}
	return plan
}

// inPlacePlan is the next step of an InPlace rollout.
type inPlacePlan struct {
	// drain names old machines to drain; once drained, their machine is
	// set to the new version.
	drain []string
	// uncordon names nodes that run the new version again.
	uncordon []string
}

// planInPlace keeps draining old nodes already draining, uncordons nodes
// drained for the upgrade that now run the new version, and starts
// draining more old nodes while fewer than maxUnavailable nodes are
// unavailable (old nodes that are not available cost nothing).
func planInPlace(states []machineState, target string, l rolloutLimits) inPlacePlan {
	var plan inPlacePlan
	unavailable := 0
	var candidates []string
	for _, m := range states {
		switch {
		case m.version == target && m.draining() && m.runs(target):
			plan.uncordon = append(plan.uncordon, m.name)
			continue // available again once uncordoned
		case m.version != target && m.draining():
			plan.drain = append(plan.drain, m.name)
		case m.version != target && !m.available():
			plan.drain = append(plan.drain, m.name)
			continue // unavailable already (or no node yet): costs nothing
		case m.version != target && m.available():
			candidates = append(candidates, m.name)
		}
		if !m.available() {
			unavailable++
		}
	}
	for _, name := range candidates {
		if unavailable >= l.maxUnavailable {
			break
		}
		plan.drain = append(plan.drain, name)
		unavailable++
	}
	return plan
}

// rolloutMessage says where a rollout stands.
func rolloutMessage(typ hypershiftv1alpha1.UpgradeType, target string, states []machineState, want int, draining []string) string {
	updated := 0
	for _, m := range states {
		if m.version == target && m.runs(target) && !m.node.Spec.Unschedulable {
			updated++
		}
	}
	msg := fmt.Sprintf("%s upgrade to %s: %d of %d nodes updated", typ, target, updated, want)
	if len(draining) > 0 {
		msg += "; draining " + strings.Join(draining, ", ")
	}
	return msg
}
