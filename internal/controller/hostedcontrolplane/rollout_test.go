package hostedcontrolplane

import (
	"strings"
	"testing"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
)

// haSpecs is an HA control plane rendered for version v: the version is
// carried in each spec's args so the test can tell old from target.
func haSpecs(v string) []runtime.Spec {
	spec := func(name, component string) runtime.Spec {
		return runtime.Spec{Name: name, Component: component, Args: []string{"--for=" + v}}
	}
	return []runtime.Spec{
		spec("etcd-0", components.Etcd), spec("etcd-1", components.Etcd), spec("etcd-2", components.Etcd),
		spec("konnectivity-server", "konnectivity-server"),
		spec("kube-apiserver-0", components.KubeAPIServer), spec("kube-apiserver-1", components.KubeAPIServer),
		spec("kube-apiserver-proxy", components.KubeAPIServerProxy),
		spec("kube-controller-manager-0", components.KubeControllerManager), spec("kube-controller-manager-1", components.KubeControllerManager),
		spec("kube-scheduler-0", components.KubeScheduler), spec("kube-scheduler-1", components.KubeScheduler),
	}
}

// running says which instances run which version (all ready unless listed
// in notReady).
func running(specs []runtime.Spec, at map[string]string, def string, notReady ...string) []instanceState {
	var out []instanceState
	for _, s := range specs {
		v := def
		if x, ok := at[s.Name]; ok {
			v = x
		}
		ready := true
		for _, n := range notReady {
			if n == s.Name {
				ready = false
			}
		}
		out = append(out, instanceState{Name: s.Name, Component: s.Component, Version: v, Ready: ready})
	}
	return out
}

// versionsOf says, per versioned instance, which rendering the plan applies.
func versionsOf(specs []runtime.Spec) map[string]string {
	out := map[string]string{}
	for _, s := range specs {
		out[s.Name] = strings.TrimPrefix(s.Args[0], "--for=")
	}
	return out
}

func TestRollout(t *testing.T) {
	const from, to = "v1.36.3", "v1.37.1"
	old, target := haSpecs(from), haSpecs(to)
	tests := []struct {
		name        string
		from        string
		pods        bool
		instances   []instanceState
		wantRolling string
		wantMoved   int
		wantTotal   int
		// wantOld lists the instances that keep the old spec; every other
		// one gets the target's.
		wantOld []string
	}{
		{
			name: "start: the first API server moves, everything else versioned stays", from: from,
			instances:   running(old, nil, from),
			wantRolling: "kube-apiserver-0", wantTotal: 6,
			wantOld: []string{"kube-apiserver-1", "kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "first API server restarted on the target but not ready: wait", from: from,
			instances:   running(old, map[string]string{"kube-apiserver-0": to}, from, "kube-apiserver-0"),
			wantRolling: "kube-apiserver-0", wantTotal: 6,
			wantOld: []string{"kube-apiserver-1", "kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "first API server ready on the target: the second moves", from: from,
			instances:   running(old, map[string]string{"kube-apiserver-0": to}, from),
			wantRolling: "kube-apiserver-1", wantMoved: 1, wantTotal: 6,
			wantOld: []string{"kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "API servers done: controller managers before schedulers", from: from,
			instances:   running(old, map[string]string{"kube-apiserver-0": to, "kube-apiserver-1": to}, from),
			wantRolling: "kube-controller-manager-0", wantMoved: 2, wantTotal: 6,
			wantOld: []string{"kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "an API server that falls back out of readiness holds the rest where they are", from: from,
			instances: running(old, map[string]string{
				"kube-apiserver-0": to, "kube-apiserver-1": to, "kube-controller-manager-0": to,
			}, from, "kube-apiserver-0"),
			// The two that run the target and are ready count as done.
			wantRolling: "kube-apiserver-0", wantMoved: 2, wantTotal: 6,
			wantOld: []string{"kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "instances without a process (resuming) keep the last Completed version", from: from,
			instances:   running(old, nil, "", "kube-apiserver-0", "kube-apiserver-1", "kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"),
			wantRolling: "kube-apiserver-0", wantTotal: 6,
			wantOld: []string{"kube-apiserver-1", "kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "all moved: done", from: from,
			instances: running(old, nil, to),
			wantMoved: 6, wantTotal: 6,
		},
		{
			name: "a new control plane has nothing old to keep", from: to,
			instances:   nil,
			wantRolling: "kube-apiserver-0", wantTotal: 6,
		},
		{
			name: "pods: the API server component moves as one", from: from, pods: true,
			instances:   running(old, map[string]string{"kube-apiserver-0": to}, from),
			wantRolling: components.KubeAPIServer, wantTotal: 3,
			wantOld: []string{"kube-controller-manager-0", "kube-controller-manager-1", "kube-scheduler-0", "kube-scheduler-1"},
		},
		{
			name: "pods: then the controller manager", from: from, pods: true,
			instances:   running(old, map[string]string{"kube-apiserver-0": to, "kube-apiserver-1": to}, from),
			wantRolling: components.KubeControllerManager, wantMoved: 1, wantTotal: 3,
			wantOld: []string{"kube-scheduler-0", "kube-scheduler-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rendered := map[string][]runtime.Spec{to: target, tt.from: old}
			if tt.from == to {
				rendered = map[string][]runtime.Spec{to: target}
			}
			plan := rollout(rolloutInput{From: tt.from, To: to, Rendered: rendered, Instances: tt.instances, ByComponent: tt.pods})
			if plan.Rolling != tt.wantRolling || plan.Moved != tt.wantMoved || plan.Total != tt.wantTotal || plan.Done != (tt.wantRolling == "") {
				t.Errorf("rolling %q, %d of %d moved, done %v; want %q, %d of %d", plan.Rolling, plan.Moved, plan.Total, plan.Done, tt.wantRolling, tt.wantMoved, tt.wantTotal)
			}
			if len(plan.Specs) != len(target) {
				t.Fatalf("%d specs, want %d", len(plan.Specs), len(target))
			}
			got := versionsOf(plan.Specs)
			for _, s := range target {
				want := to
				for _, n := range tt.wantOld {
					if n == s.Name {
						want = tt.from
					}
				}
				if got[s.Name] != want {
					t.Errorf("%s gets the %s spec, want %s", s.Name, got[s.Name], want)
				}
			}
		})
	}
}

// TestRolloutFoldedInstances: instances the old rendering names differently
// (a single-process control plane) take the target at once.
func TestRolloutFoldedInstances(t *testing.T) {
	old := []runtime.Spec{
		{Name: "kube-apiserver", Component: components.KubeAPIServer, Args: []string{"--for=v1.36.3"}},
		{Name: "kube-controller-manager", Component: components.KubeControllerManager, Args: []string{"--for=v1.36.3"}},
	}
	target := []runtime.Spec{{Name: "kube-control-plane", Component: components.KubeControlPlane, Args: []string{"--for=v1.37.1"}}}
	plan := rollout(rolloutInput{From: "v1.36.3", To: "v1.37.1", Rendered: map[string][]runtime.Spec{"v1.36.3": old, "v1.37.1": target}})
	if len(plan.Specs) != 1 || plan.Specs[0].Name != "kube-control-plane" || plan.Rolling != "kube-control-plane" {
		t.Errorf("plan %+v, want the folded instance at its target", plan)
	}
}

func TestRolloutProgressMessage(t *testing.T) {
	p := rolloutPlan{Rolling: "kube-apiserver-1", Moved: 1, Total: 6}
	if got, want := p.progress("v1.37.1"), "Rolling kube-apiserver-1 to v1.37.1 (1 of 6 instances done)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestRolloutSupersededNeverMovesBack: a rollout to v1.37.1 superseded by
// v1.37.2 keeps the instances it has not reached yet at what they run —
// v1.37.1 for those already moved — never back at v1.36.3.
func TestRolloutSupersededNeverMovesBack(t *testing.T) {
	from, mid, to := "v1.36.3", "v1.37.1", "v1.37.2"
	rendered := map[string][]runtime.Spec{from: haSpecs(from), mid: haSpecs(mid), to: haSpecs(to)}
	instances := running(rendered[from], map[string]string{"kube-apiserver-0": mid, "kube-apiserver-1": mid}, from)
	plan := rollout(rolloutInput{From: from, To: to, Rendered: rendered, Instances: instances})
	if plan.Rolling != "kube-apiserver-0" {
		t.Errorf("rolling %q, want kube-apiserver-0", plan.Rolling)
	}
	got := versionsOf(plan.Specs)
	for name, want := range map[string]string{
		"kube-apiserver-0": to, "kube-apiserver-1": mid, "kube-controller-manager-0": from, "etcd-0": to,
	} {
		if got[name] != want {
			t.Errorf("%s gets the %s spec, want %s", name, got[name], want)
		}
	}
}
