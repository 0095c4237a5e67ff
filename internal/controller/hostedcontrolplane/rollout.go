package hostedcontrolplane

import (
	"fmt"
	"slices"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
)

// Rolling a control plane to a new Kubernetes version (docs/upgrades.md):
//
//	renderings (the target version, the last Completed one, and any
//	            version an instance still runs) ─┐
//	instances' versions and readiness ───────────┴─ rollout ─→ specs to apply + progress
//
// Only kube-apiserver, kube-controller-manager and kube-scheduler are
// versioned; etcd, Konnectivity and the endpoint proxy come from the
// hypershift binary and take the target spec at once. Versioned instances
// move in rolloutOrder, and the next one only when the one before runs the
// target version and is ready: the API servers first (an API server serves
// controllers one minor older, never newer), one at a time so a
// HighlyAvailable control plane keeps one behind its endpoint. An instance
// the rollout has not reached keeps the version it runs (a rollout
// superseded by a newer patch never moves an instance back), or the last
// Completed one when it runs none.

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
	// Rendered is the control plane rendered for To, for From, and for
	// every version an instance runs, by version.
	Rendered map[string][]runtime.Spec
	// Instances are the runtime's view.
	Instances []instanceState
	// ByComponent: the runtime runs each component as one workload that
	// rolls its replicas itself (RollsComponents), so the rollout moves one
	// component at a time.
	ByComponent bool
}

// rolloutPlan is what to apply, and how far the rollout is.
type rolloutPlan struct {
	// Specs to apply: the target's, with the versioned instances the
	// rollout has not reached yet kept at their old spec.
	Specs []runtime.Spec
	// Done: every versioned instance runs To and is ready.
	Done bool
	// Rolling names the instance (component, by component) being moved to
	// To; empty when Done.
	Rolling string
	// Moved and Total count the versioned instances (components, by
	// component) that run To, and all of them.
	Moved, Total int
	// byComponent: Moved and Total count components.
	byComponent bool
}

// rollout decides, from the instances' versions, which rendering each
// instance runs. A pure function: the controller calls it on every pass,
// so a rollout resumes where it was after an operator restart.
func rollout(in rolloutInput) rolloutPlan {
	target := in.Rendered[in.To]
	units := versionedUnits(target, in.ByComponent)
	moved := func(u unit) bool {
		for _, name := range u.instances {
			st, ok := findInstance(in.Instances, name)
			if !ok || st.Version != in.To || !st.Ready {
				return false
			}
		}
		return true
	}
	plan := rolloutPlan{Total: len(units), byComponent: in.ByComponent}
	notReached := map[string]bool{}
	for _, u := range units {
		done := moved(u)
		if done {
			plan.Moved++ // a unit past the one rolling may be done too: at creation all start at once
		}
		switch {
		case plan.Rolling != "":
			for _, name := range u.instances {
				notReached[name] = true
			}
		case !done:
			plan.Rolling = u.name
		}
	}
	plan.Done = plan.Rolling == ""
	plan.Specs = make([]runtime.Spec, 0, len(target))
	for _, s := range target {
		if notReached[s.Name] {
			if kept, ok := in.keep(s.Name); ok {
				plan.Specs = append(plan.Specs, kept)
				continue
			}
		}
		plan.Specs = append(plan.Specs, s)
	}
	return plan
}

// keep is the spec an instance the rollout has not reached stays at: that
// of the version it runs, else of From. Instances a rendering does not
// name (a control plane folded into one process, or unfolded) cannot be
// kept beside the new ones: they take the target at once.
func (in rolloutInput) keep(name string) (runtime.Spec, bool) {
	v := in.From
	if st, ok := findInstance(in.Instances, name); ok && st.Version != "" {
		if _, rendered := in.Rendered[st.Version]; rendered {
			v = st.Version
		}
	}
	for _, s := range in.Rendered[v] {
		if s.Name == name {
			return s, true
		}
	}
	return runtime.Spec{}, false
}

// unit is what moves in one step: one instance, or one component's
// instances by component.
type unit struct {
	name      string
	instances []string
}

// versionedUnits lists the versioned instances of specs in rollout order.
func versionedUnits(specs []runtime.Spec, byComponent bool) []unit {
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
		if byComponent {
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
	return fmt.Sprintf("Rolling %s to %s (%d of %d %s done)", p.Rolling, to, p.Moved, p.Total, p.unitName())
}

// installProgress is the message of a creation under way: every instance
// starts at once, the first in rollout order not running yet is named.
func (p rolloutPlan) installProgress(to string) string {
	return fmt.Sprintf("Installing %s: %d of %d %s running, waiting for %s", to, p.Moved, p.Total, p.unitName(), p.Rolling)
}

func (p rolloutPlan) unitName() string {
	if p.byComponent {
		return "components"
	}
	return "instances"
}
