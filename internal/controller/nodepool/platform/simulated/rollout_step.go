package simulated

import (
	"context"
	"time"

	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/drain"
	simagent "hypershift.dev/internal/nodes/simulated"
)

// rolloutStep is what Reconcile does for a version rollout in this pass.
type rolloutStep struct {
	// rolling: some machine does not run the pool's version yet, or an
	// InPlace node waits to be uncordoned.
	rolling bool
	// add is how many machines to add (at the pool's version).
	add int
	// limit is the number of machines beyond which scale-down removes:
	// the pool's size, plus maxSurge while a Replace rollout runs.
	limit int
	// replace names old machines a Replace rollout drains and removes.
	replace map[string]bool
	// inPlace: the pool upgrades in place, so rollInPlace (not scaleDown)
	// decides which drained nodes are uncordoned.
	inPlace bool
	plan    inPlacePlan
	// drainingInPlace names the nodes drained for an InPlace upgrade.
	drainingInPlace []string
}

// withVersions gives every machine its version: machines of a list
// written before machines named their version run the list's (or, in a
// list that names none, the pool's).
func withVersions(machines []simagent.Machine, listVersion, poolVersion string) []simagent.Machine {
	out := append([]simagent.Machine(nil), machines...)
	for i := range out {
		switch {
		case out[i].KubeletVersion != "":
		case listVersion != "":
			out[i].KubeletVersion = listVersion
		default:
			out[i].KubeletVersion = poolVersion
		}
	}
	return out
}

// planRollout decides this pass's rollout step. Without a rollout (or
// when the pool's version is held) the pool only scales to want.
func (p *Platform) planRollout(s *platform.Pool, machines []simagent.Machine, want int) (rolloutStep, error) {
	step := rolloutStep{add: max(want-len(machines), 0), limit: want}
	if s.VersionHeld || s.Deleting || s.Version == "" {
		return step, nil // deleting: no version decided, every machine goes
	}
	limits, err := limitsOf(s.NodePool.Spec.Management, want)
	if err != nil {
		return step, err
	}
	states := statesOf(machines, s.Nodes)
	for _, m := range states {
		if m.version != s.Version {
			step.rolling = true
		}
	}
	if limits.inPlace {
		step.inPlace = true
		step.plan = planInPlace(states, s.Version, limits)
		step.rolling = step.rolling || len(step.plan.uncordon) > 0
		return step, nil
	}
	if !step.rolling {
		return step, nil
	}
	plan := planReplace(states, s.Version, want, limits)
	step.add, step.limit = plan.add, want+limits.maxSurge
	step.replace = map[string]bool{}
	for _, name := range plan.drain {
		step.replace[name] = true
	}
	return step, nil
}

// rollInPlace carries out an InPlace step on the machines that are not
// being removed: uncordons nodes back at the pool's version, drains the
// chosen old nodes, and sets the version of each drained machine — its
// agent then restarts the node at that version under the same name.
func (p *Platform) rollInPlace(ctx context.Context, s *platform.Pool, machines []simagent.Machine, step *rolloutStep, removing map[string]bool, now time.Time, report *platform.Report) error {
	if !step.inPlace {
		return nil
	}
	for _, name := range step.plan.uncordon {
		if node := s.Nodes[name]; node != nil && !removing[name] {
			if err := drain.Uncordon(ctx, s.Cluster.Kube, node); err != nil {
				return err
			}
			s.Log.Info("in-place upgrade: node runs the new version, uncordoned", "node", name, "version", s.Version)
		}
	}
	drainNow := map[string]bool{}
	for _, name := range step.plan.drain {
		if !removing[name] {
			drainNow[name] = true
		}
	}
	for i := range machines {
		m := &machines[i]
		if !drainNow[m.Name] {
			continue
		}
		if node := s.Nodes[m.Name]; node != nil {
			res, err := drain.Node(ctx, s.Cluster.Kube, node, drainTimeout(s), now)
			if err != nil {
				return err
			}
			if !res.Done {
				step.drainingInPlace = append(step.drainingInPlace, m.Name)
				report.Blocked += res.Blocked
				continue
			}
			if res.TimedOut {
				s.Log.Info("drain timed out, upgrading the node anyway", "node", m.Name, "podsLeft", res.Remaining)
			}
		}
		s.Log.Info("in-place upgrade: node drained, restarting it at the new version", "node", m.Name, "from", m.KubeletVersion, "to", s.Version)
		m.KubeletVersion = s.Version
	}
	return nil
}

// drainTimeout is spec.nodeDrainTimeout; zero waits as long as it takes.
func drainTimeout(s *platform.Pool) time.Duration {
	if s.NodePool.Spec.NodeDrainTimeout != nil {
		return s.NodePool.Spec.NodeDrainTimeout.Duration
	}
	return 0
}

// reportRollout puts a running rollout into the report: old nodes it
// drains are not a scale-down, and the machines it adds beyond the pool's
// size are not part of the size (the autoscaler starts from
// status.replicas). It returns how many machines that is.
func reportRollout(s *platform.Pool, step rolloutStep, machines []simagent.Machine, want int, report *platform.Report) int {
	if !step.rolling {
		return 0
	}
	var scaling, rolling []string
	for _, name := range report.Draining {
		if step.replace[name] {
			rolling = append(rolling, name)
		} else {
			scaling = append(scaling, name)
		}
	}
	report.Draining = scaling
	report.Rollout = rolloutMessage(s.NodePool.Spec.Management.UpgradeType, s.Version,
		statesOf(machines, s.Nodes), want, append(rolling, step.drainingInPlace...))
	report.Busy = true
	return max(len(machines)-want, 0)
}
