package addons

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func deployment(name string, labels map[string]any, status map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "generation": int64(2), "labels": labels},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   status,
	}}
}

func TestProbeObject(t *testing.T) {
	deployKind := hypershiftv1alpha1.ProbeSelector{Kind: hypershiftv1alpha1.PackageProbeKindSpec{Group: "apps", Kind: "Deployment"}}
	available := hypershiftv1alpha1.Probe{Condition: &hypershiftv1alpha1.ProbeConditionSpec{Type: "Available", Status: "True"}}
	replicas := hypershiftv1alpha1.Probe{FieldsEqual: &hypershiftv1alpha1.ProbeFieldsEqualSpec{FieldA: ".spec.replicas", FieldB: ".status.readyReplicas"}}
	hans := hypershiftv1alpha1.Probe{CEL: &hypershiftv1alpha1.ProbeCELSpec{Rule: `self.metadata.name == "Hans"`, Message: "Object must be named Hans"}}
	cond := func(status string, gen int64) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": "Available", "status": status, "observedGeneration": gen, "message": "m"}}, "readyReplicas": int64(2)}
	}
	cases := []struct {
		name   string
		probes []hypershiftv1alpha1.ObjectSetProbe
		obj    *unstructured.Unstructured
		want   string // "" passes; else a part of the message
	}{
		{"no probe selects it", nil, deployment("a", nil, nil), ""},
		{"other kind", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{available}, Selector: hypershiftv1alpha1.ProbeSelector{Kind: hypershiftv1alpha1.PackageProbeKindSpec{Kind: "ConfigMap"}}}}, deployment("a", nil, nil), ""},
		{"condition true", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{available}, Selector: deployKind}}, deployment("a", nil, cond("True", 2)), ""},
		{"condition false", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{available}, Selector: deployKind}}, deployment("a", nil, cond("False", 2)), "condition Available is False"},
		{"condition of an old generation", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{available}, Selector: deployKind}}, deployment("a", nil, cond("True", 1)), "describes generation 1"},
		{"condition missing", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{available}, Selector: deployKind}}, deployment("a", nil, nil), "not reported yet"},
		{"fields equal", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{replicas}, Selector: deployKind}}, deployment("a", nil, cond("True", 2)), ""},
		{"fields differ", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{replicas}, Selector: deployKind}}, deployment("a", nil, map[string]any{"readyReplicas": int64(1)}), "is not equal to"},
		{"field missing", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{replicas}, Selector: deployKind}}, deployment("a", nil, nil), "not both set"},
		{"cel passes", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{hans}, Selector: deployKind}}, deployment("Hans", nil, nil), ""},
		{"cel fails with its message", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{hans}, Selector: deployKind}}, deployment("Otto", nil, nil), "Object must be named Hans"},
		{"cel that does not compile", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{{CEL: &hypershiftv1alpha1.ProbeCELSpec{Rule: "self.(", Message: "x"}}}, Selector: deployKind}}, deployment("a", nil, nil), "CEL rule"},
		{"label selector excludes it", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{hans}, Selector: hypershiftv1alpha1.ProbeSelector{Kind: deployKind.Kind, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}, deployment("Otto", map[string]any{"app": "y"}, nil), ""},
		{"label selector includes it", []hypershiftv1alpha1.ObjectSetProbe{{Probes: []hypershiftv1alpha1.Probe{hans}, Selector: hypershiftv1alpha1.ProbeSelector{Kind: deployKind.Kind, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}, deployment("Otto", map[string]any{"app": "x"}, nil), "named Hans"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := probeObject(tc.probes, tc.obj)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("probe says %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMapConditions(t *testing.T) {
	obj := deployment("op", nil, map[string]any{"conditions": []any{
		map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "ok"},
		map[string]any{"type": "Progressing", "status": "False"},
	}})
	got := mapConditions(obj, []hypershiftv1alpha1.ConditionMapping{{SourceType: "Available", DestinationType: "example.com/OperatorAvailable"}, {SourceType: "Missing", DestinationType: "x/Y"}})
	if len(got) != 1 || got[0].Type != "example.com/OperatorAvailable" || got[0].Status != "True" || got[0].Reason != "MinimumReplicasAvailable" || !strings.Contains(got[0].Message, "Deployment op: ok") {
		t.Fatalf("mapped %+v", got)
	}
}

// TestCELProbeIsBounded: a rule of 10^8 steps, or one too long to be a
// probe, is refused at once — the one addon worker of every tenant runs
// these — while an ordinary rule still passes.
func TestCELProbeIsBounded(t *testing.T) {
	obj := deployment("Hans", nil, nil).Object
	if ok, err := evalCEL(`self.metadata.name == "Hans"`, obj); !ok || err != nil {
		t.Fatalf("an ordinary rule: %v, %v", ok, err)
	}
	ten := "[0,1,2,3,4,5,6,7,8,9]"
	rule := "true"
	for _, v := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		rule = ten + ".all(" + v + ", " + rule + ")"
	}
	start := time.Now()
	ok, err := evalCEL(rule, obj)
	took := time.Since(start)
	if err == nil || ok {
		t.Errorf("a rule of 10^8 steps: %v, %v; want it cut off", ok, err)
	}
	if took > 2*time.Second {
		t.Errorf("a rule of 10^8 steps ran %s before it was cut off", took)
	}
	// Whatever the time allowed, the cost limit ends it (which bound
	// comes first depends on the machine's speed).
	if ok, err := evalCELWithin(rule, obj, time.Minute); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Errorf("a rule of 10^8 steps with a minute to run: %v, %v; want it cut off for its cost", ok, err)
	}
	if _, err := evalCEL(strings.Repeat("true && ", 1000)+"true", obj); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("an 8 KiB rule: %v, want refused for its length", err)
	}
}
