package simulated

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/nodes/drain"
	simagent "hypershift.dev/internal/nodes/simulated"
)

// scaleDownOrder sorts machines by how readily they go when the pool
// shrinks: machines already draining (a scale-down in progress is not
// changed midway), then machines whose node never registered, then those
// whose node is not Ready, then the rest — newest first within each group,
// as Cluster API's "Newest" delete policy does.
func scaleDownOrder(machines []simagent.Machine, nodes map[string]*corev1.Node) []simagent.Machine {
	rank := func(m simagent.Machine) int {
		node := nodes[m.Name]
		switch {
		case node != nil && drain.Draining(node):
			return 0
		case node == nil:
			return 1
		case !drain.NodeReady(node):
			return 2
		default:
			return 3
		}
	}
	out := append([]simagent.Machine(nil), machines...)
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := rank(out[i]), rank(out[j])
		if ri != rj {
			return ri < rj
		}
		if !out[i].Created.Equal(&out[j].Created) {
			return out[j].Created.Before(&out[i].Created)
		}
		return out[i].Name > out[j].Name
	})
	return out
}

// Autorepair thresholds: a node NotReady (or Unknown) this long, or a
// machine whose node has not registered this long after it was created, is
// replaced — Cluster API MachineHealthCheck's defaults as HyperShift sets
// them.
const (
	UnhealthyNodeTimeout = 5 * time.Minute
	NodeStartupTimeout   = 10 * time.Minute
)

// unhealthy returns the machines autorepair replaces, and when the next one
// would become due (zero when none is pending).
func unhealthy(machines []simagent.Machine, nodes map[string]*corev1.Node, now time.Time) (bad []string, next time.Time) {
	due := func(at time.Time) bool {
		if !now.Before(at) {
			return true
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
		return false
	}
	for _, m := range machines {
		node := nodes[m.Name]
		switch {
		case node == nil:
			if due(m.Created.Add(NodeStartupTimeout)) {
				bad = append(bad, m.Name)
			}
		case drain.Draining(node):
		case !drain.NodeReady(node):
			since := m.Created.Time
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady {
					since = c.LastTransitionTime.Time
				}
			}
			if due(since.Add(UnhealthyNodeTimeout)) {
				bad = append(bad, m.Name)
			}
		}
	}
	return bad, next
}
