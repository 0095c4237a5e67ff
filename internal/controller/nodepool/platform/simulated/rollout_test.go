package simulated

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/drain"
	simagent "hypershift.dev/internal/nodes/simulated"
)

const (
	oldV = "v1.36.3"
	newV = "v1.37.1"
)

// Node states the planners see.
const (
	absent     = iota // machine, no Node yet
	ready             // Ready, schedulable
	notReady          // registered, not Ready
	cordoned          // Ready, cordoned for a drain
	restarting        // cordoned for a drain, Ready, still reporting the old version
)

// st is a machine set to run version, whose node is in state and reports
// reported (default: version).
func st(name, version string, state int, reported ...string) machineState {
	m := machineState{name: name, version: version}
	if state == absent {
		return m
	}
	kubelet := version
	if len(reported) > 0 {
		kubelet = reported[0]
	}
	status := corev1.ConditionTrue
	if state == notReady {
		status = corev1.ConditionFalse
	}
	m.node = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: kubelet},
		},
	}
	if state == cordoned || state == restarting {
		m.node.Spec.Unschedulable = true
		m.node.Annotations = map[string]string{drain.StartedAnnotation: "2026-11-24T00:00:00Z"}
	}
	return m
}

func TestPlanReplace(t *testing.T) {
	surge1 := rolloutLimits{maxSurge: 1, maxUnavailable: 0}
	tests := []struct {
		name   string
		states []machineState
		want   int
		limits rolloutLimits
		plan   replacePlan
	}{
		{
			name:   "start: surge one new machine, drain nothing (maxUnavailable 0)",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready)},
			want:   3, limits: surge1,
			plan: replacePlan{add: 1},
		},
		{
			name:   "new node not Ready yet: wait",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready), st("d", newV, notReady)},
			want:   3, limits: surge1,
			plan: replacePlan{},
		},
		{
			name:   "new node has no Node yet: wait",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready), st("d", newV, absent)},
			want:   3, limits: surge1,
			plan: replacePlan{},
		},
		{
			name:   "new node Ready: drain one old node",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready), st("d", newV, ready)},
			want:   3, limits: surge1,
			plan: replacePlan{drain: []string{"a"}},
		},
		{
			name:   "an old node draining keeps draining, no second one",
			states: []machineState{st("a", oldV, cordoned), st("b", oldV, ready), st("c", oldV, ready), st("d", newV, ready)},
			want:   3, limits: surge1,
			plan: replacePlan{drain: []string{"a"}},
		},
		{
			name:   "old node removed: surge the next",
			states: []machineState{st("b", oldV, ready), st("c", oldV, ready), st("d", newV, ready)},
			want:   3, limits: surge1,
			plan: replacePlan{add: 1},
		},
		{
			name:   "an old node that is not Ready goes without costing availability",
			states: []machineState{st("a", oldV, notReady), st("b", oldV, ready), st("c", oldV, ready), st("d", newV, notReady)},
			want:   3, limits: surge1,
			plan: replacePlan{drain: []string{"a"}},
		},
		{
			name:   "maxUnavailable 1, maxSurge 0: drain first, add when removed",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready)},
			want:   3, limits: rolloutLimits{maxUnavailable: 1},
			plan: replacePlan{drain: []string{"a"}},
		},
		{
			name:   "maxUnavailable 1, maxSurge 0: one removed, add one, keep draining none",
			states: []machineState{st("b", oldV, ready), st("c", oldV, ready)},
			want:   3, limits: rolloutLimits{maxUnavailable: 1},
			plan: replacePlan{add: 1},
		},
		{
			name:   "maxSurge 2: two new machines at once",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready)},
			want:   3, limits: rolloutLimits{maxSurge: 2},
			plan: replacePlan{add: 2},
		},
		{
			name:   "last old node",
			states: []machineState{st("c", oldV, ready), st("d", newV, ready), st("e", newV, ready), st("f", newV, ready)},
			want:   3, limits: surge1,
			plan: replacePlan{drain: []string{"c"}},
		},
		{
			name:   "pool grows during the rollout: new machines at the new version",
			states: []machineState{st("a", oldV, ready)},
			want:   3, limits: surge1,
			plan: replacePlan{add: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planReplace(tt.states, newV, tt.want, tt.limits)
			if !reflect.DeepEqual(got, tt.plan) {
				t.Errorf("planReplace = %+v, want %+v", got, tt.plan)
			}
		})
	}
}

func TestPlanInPlace(t *testing.T) {
	one := rolloutLimits{inPlace: true, maxUnavailable: 1}
	tests := []struct {
		name   string
		states []machineState
		limits rolloutLimits
		plan   inPlacePlan
	}{
		{
			name:   "start: drain one node",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready)},
			limits: one,
			plan:   inPlacePlan{drain: []string{"a"}},
		},
		{
			name:   "one draining: keep at it, no second",
			states: []machineState{st("a", oldV, cordoned), st("b", oldV, ready), st("c", oldV, ready)},
			limits: one,
			plan:   inPlacePlan{drain: []string{"a"}},
		},
		{
			name:   "restarted but still reporting the old version: wait",
			states: []machineState{st("a", newV, restarting, oldV), st("b", oldV, ready), st("c", oldV, ready)},
			limits: one,
			plan:   inPlacePlan{},
		},
		{
			name:   "back Ready at the new version: uncordon it and drain the next",
			states: []machineState{st("a", newV, cordoned), st("b", oldV, ready), st("c", oldV, ready)},
			limits: one,
			plan:   inPlacePlan{uncordon: []string{"a"}, drain: []string{"b"}},
		},
		{
			name:   "a node at the new version is NotReady: it counts as unavailable",
			states: []machineState{st("a", newV, notReady), st("b", oldV, ready), st("c", oldV, ready)},
			limits: one,
			plan:   inPlacePlan{},
		},
		{
			name:   "an old node that is not Ready is upgraded without costing availability",
			states: []machineState{st("a", oldV, notReady), st("b", oldV, ready), st("c", oldV, ready)},
			limits: one,
			plan:   inPlacePlan{drain: []string{"a", "b"}},
		},
		{
			name:   "an old machine without a Node just gets the new version",
			states: []machineState{st("a", oldV, absent), st("b", newV, ready)},
			limits: one,
			plan:   inPlacePlan{drain: []string{"a"}},
		},
		{
			name:   "maxUnavailable 2",
			states: []machineState{st("a", oldV, ready), st("b", oldV, ready), st("c", oldV, ready)},
			limits: rolloutLimits{inPlace: true, maxUnavailable: 2},
			plan:   inPlacePlan{drain: []string{"a", "b"}},
		},
		{
			name:   "done",
			states: []machineState{st("a", newV, ready), st("b", newV, ready), st("c", newV, ready)},
			limits: one,
			plan:   inPlacePlan{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planInPlace(tt.states, newV, tt.limits)
			if !reflect.DeepEqual(got, tt.plan) {
				t.Errorf("planInPlace = %+v, want %+v", got, tt.plan)
			}
		})
	}
}

func TestLimitsOf(t *testing.T) {
	ptrTo := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	tests := []struct {
		name string
		m    hypershiftv1alpha1.NodePoolManagement
		want int
		out  rolloutLimits
	}{
		{
			name: "Replace defaults", m: hypershiftv1alpha1.NodePoolManagement{UpgradeType: hypershiftv1alpha1.UpgradeTypeReplace}, want: 3,
			out: rolloutLimits{maxSurge: 1},
		},
		{
			name: "InPlace defaults", m: hypershiftv1alpha1.NodePoolManagement{UpgradeType: hypershiftv1alpha1.UpgradeTypeInPlace}, want: 3,
			out: rolloutLimits{inPlace: true, maxUnavailable: 1},
		},
		{name: "percentages: surge rounds up, unavailable down", m: hypershiftv1alpha1.NodePoolManagement{
			UpgradeType: hypershiftv1alpha1.UpgradeTypeReplace,
			Replace: &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{
				MaxSurge: ptrTo(intstr.FromString("25%")), MaxUnavailable: ptrTo(intstr.FromString("25%")),
			}},
		}, want: 10, out: rolloutLimits{maxSurge: 3, maxUnavailable: 2}},
		{name: "both resolve to 0: maxUnavailable 1", m: hypershiftv1alpha1.NodePoolManagement{
			UpgradeType: hypershiftv1alpha1.UpgradeTypeReplace,
			Replace: &hypershiftv1alpha1.ReplaceUpgrade{RollingUpdate: &hypershiftv1alpha1.RollingUpdate{
				MaxSurge: ptrTo(intstr.FromInt32(0)), MaxUnavailable: ptrTo(intstr.FromString("10%")),
			}},
		}, want: 3, out: rolloutLimits{maxUnavailable: 1}},
		{name: "InPlace percentage never below 1", m: hypershiftv1alpha1.NodePoolManagement{
			UpgradeType: hypershiftv1alpha1.UpgradeTypeInPlace,
			InPlace:     &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: ptr.To(intstr.FromString("10%"))},
		}, want: 3, out: rolloutLimits{inPlace: true, maxUnavailable: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := limitsOf(tt.m, tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.out {
				t.Errorf("limitsOf = %+v, want %+v", got, tt.out)
			}
		})
	}
}

// Deleting a pool (no version decided) or holding its version must not
// start a rollout: a rollout's surge limit would keep machines a deletion
// removes.
func TestPlanRolloutWithoutAVersion(t *testing.T) {
	machines := withVersions([]simagent.Machine{{Name: "a"}, {Name: "b", KubeletVersion: newV}}, oldV, "")
	if machines[0].KubeletVersion != oldV || machines[1].KubeletVersion != newV {
		t.Fatalf("withVersions = %+v, want a at the list's %s, b at its own %s", machines, oldV, newV)
	}
	np := &hypershiftv1alpha1.NodePool{}
	np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeReplace
	for name, pool := range map[string]*platform.Pool{
		"deleting": {NodePool: np, Deleting: true},
		"held":     {NodePool: np, Version: newV, VersionHeld: true},
	} {
		step, err := (&Platform{}).planRollout(pool, machines, 0)
		if err != nil {
			t.Fatal(err)
		}
		if step.rolling || step.limit != 0 || step.add != 0 || len(step.replace) != 0 {
			t.Errorf("%s: step %+v, want a plain scale to 0", name, step)
		}
	}
	step, err := (&Platform{}).planRollout(&platform.Pool{NodePool: np, Version: newV}, machines, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !step.rolling || step.limit != 3 {
		t.Errorf("step %+v, want a Replace rollout with room for one surge machine", step)
	}
}
