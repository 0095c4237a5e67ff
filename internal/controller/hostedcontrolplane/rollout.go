package hostedcontrolplane

import (
	"fmt"
	"slices"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
)

// Rolling a control plane to a new Kubernetes version (docs/upgrades.md):
//
//	old specs (last Completed version) ─┐
//	target specs (spec.kubernetesVersion)├─ rollout ─→ specs to apply + progress
//	instances' version and readiness ───┘
//
// Only kube-apiserver, kube-controller-manager and kube-scheduler are
// versioned; etcd, Konnectivity and the endpoint proxy come from the
// hypershift binary and take the target spec at once. Versioned instances
// move in rolloutOrder, and the next one only when the one before runs the
// target version and is ready: the API servers first (an API server serves
// controllers one minor older, never newer), one at a time so a
// HighlyAvailable control plane keeps one behind its endpoint.

// rolloutOrder is the order in which versioned components move.
var rolloutOrder = []string{components.KubeAPIServer, components.KubeControlPlane, components.KubeControllerManager, components.KubeScheduler}

// instanceState is what the rollout needs to know of a running instance.
type instanceState struct {
	Name, Component string
	// Version the running instance was started from (normalised: never
	// empty for a versioned component).
	Version string
	// Ready: it runs and passes its readiness probe.
	Ready bool
}

// rolloutInput is what one rollout decision is made from.
type rolloutInput struct {
	// From is the version the control plane last ran completely, To the
	// one asked for.
	From, To string
	// Old and Target are the control plane rendered for From and To.
	Old, Target []runtime.Spec
	// Instances are the runtime's view.
	Instances []instanceState
	// Pods: the runtime runs each component as one workload that rolls its
	// replicas itself, so the rollout moves one component at a time.
	Pods bool
}

// rolloutPlan is what to apply, and how far the rollout is.
type rolloutPlan struct {
	// Specs to apply: the target's, with the versioned instances the
	// rollout has not reached yet kept at their old spec.
	Specs []runtime.Spec
	// Done: every versioned instance runs To and is ready.
	Done bool
	// Rolling names the instance (component, for pods) being moved to To;
	// empty when Done.
	Rolling string
	// Moved and Total count the versioned instances (components, for
	// pods) that run To, and all of them.
	Moved, Total int
	// pods: Moved and Total count components.
	pods bool
}

// rollout decides, from the instances' versions, which instances run the
// old spec and which the target one. A pure function: the controller
// calls it on every pass, so a rollout resumes where it was after an
// operator restart.
func rollout(in rolloutInput) rolloutPlan {
	units := versionedUnits(in.Target, in.Pods)
	moved := func(u unit) bool {
		for _, name := range u.instances {
			st, ok := findInstance(in.Instances, name)
			if !ok || st.Version != in.To || !st.Ready {
				return false
			}
		}
		return true
	}
	plan := rolloutPlan{Total: len(units), pods: in.Pods}
	keepOld := map[string]bool{}
	for _, u := range units {
		switch {
		case plan.Rolling != "":
			// Not reached yet: stays where it is.
			for _, name := range u.instances {
				keepOld[name] = true
			}
		case moved(u):
			plan.Moved++
		default:
			plan.Rolling = u.name
		}
	}
	plan.Done = plan.Rolling == ""
	// Instances whose names the old rendering does not have (a control
	// plane folded into one process, or unfolded) cannot be kept beside
	// the new ones: they take the target at once.
	old := map[string]runtime.Spec{}
	if in.From != in.To {
		for _, s := range in.Old {
			old[s.Name] = s
		}
	}
	plan.Specs = make([]runtime.Spec, 0, len(in.Target))
	for _, s := range in.Target {
		if o, ok := old[s.Name]; ok && keepOld[s.Name] {
			plan.Specs = append(plan.Specs, o)
			continue
		}
		plan.Specs = append(plan.Specs, s)
	}
	return plan
}

// unit is what moves in one step: one instance, or one component's
// instances for pods.
type unit struct {
	name      string
	instances []string
}

// versionedUnits lists the versioned instances of specs in rollout order.
func versionedUnits(specs []runtime.Spec, pods bool) []unit {
	var units []unit
	for _, component := range rolloutOrder {
		var names []string
		for _, s := range specs {
			if s.Component == component {
				names = append(names, s.Name)
			}
		}
		slices.Sort(names)
		if len(names) == 0 {
			continue
		}
		if pods {
			units = append(units, unit{name: component, instances: names})
			continue
		}
		for _, n := range names {
			units = append(units, unit{name: n, instances: []string{n}})
		}
	}
	return units
}

func findInstance(instances []instanceState, name string) (instanceState, bool) {
	for _, st := range instances {
		if st.Name == name {
			return st, true
		}
	}
	return instanceState{}, false
}

// isVersioned reports whether component runs a Kubernetes release (and so
// is rolled), as opposed to the hypershift binary's own components.
func isVersioned(component string) bool {
	return slices.Contains(rolloutOrder, component)
}

// progress is the ClusterVersionProgressing message of a rollout under way.
func (p rolloutPlan) progress(to string) string {
	what := "instances"
	if p.pods {
		what = "components"
	}
	return fmt.Sprintf("Rolling %s to %s (%d of %d %s done)", p.Rolling, to, p.Moved, p.Total, what)
}
