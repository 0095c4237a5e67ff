package addons

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// probeObject runs every probe whose selector matches obj and returns ""
// when all pass (or none selects it), or what failed.
func probeObject(probes []hypershiftv1alpha1.ObjectSetProbe, obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	for _, set := range probes {
		if set.Selector.Kind.Group != gvk.Group || set.Selector.Kind.Kind != gvk.Kind {
			continue
		}
		if set.Selector.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(set.Selector.Selector)
			if err != nil {
				return fmt.Sprintf("probe selector: %v", err)
			}
			if !sel.Matches(labels.Set(obj.GetLabels())) {
				continue
			}
		}
		for _, p := range set.Probes {
			if msg := runProbe(p, obj); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func runProbe(p hypershiftv1alpha1.Probe, obj *unstructured.Unstructured) string {
	if c := p.Condition; c != nil {
		if msg := probeCondition(c, obj); msg != "" {
			return msg
		}
	}
	if f := p.FieldsEqual; f != nil {
		a, okA := fieldAt(obj.Object, f.FieldA)
		b, okB := fieldAt(obj.Object, f.FieldB)
		switch {
		case !okA || !okB:
			return fmt.Sprintf("fields %s and %s are not both set", f.FieldA, f.FieldB)
		case !reflect.DeepEqual(a, b):
			return fmt.Sprintf("%s (%v) is not equal to %s (%v)", f.FieldA, a, f.FieldB, b)
		}
	}
	if c := p.CEL; c != nil {
		ok, err := evalCEL(c.Rule, obj.Object)
		switch {
		case err != nil:
			return fmt.Sprintf("CEL rule %q: %v", c.Rule, err)
		case !ok:
			return c.Message
		}
	}
	return ""
}

// probeCondition passes when the condition has the status and, where the
// condition records observedGeneration, describes the current generation.
func probeCondition(c *hypershiftv1alpha1.ProbeConditionSpec, obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, raw := range conds {
		cond, ok := raw.(map[string]any)
		if !ok || cond["type"] != c.Type {
			continue
		}
		if g, ok := cond["observedGeneration"].(int64); ok && g != obj.GetGeneration() {
			return fmt.Sprintf("condition %s describes generation %d, not %d", c.Type, g, obj.GetGeneration())
		}
		if cond["status"] != c.Status {
			return fmt.Sprintf("condition %s is %v, want %s: %v", c.Type, cond["status"], c.Status, cond["message"])
		}
		return ""
	}
	return fmt.Sprintf("condition %s is not reported yet, want %s", c.Type, c.Status)
}

// fieldAt reads a path such as .status.readyReplicas.
func fieldAt(obj map[string]any, path string) (any, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "."), ".")
	v, ok, err := unstructured.NestedFieldNoCopy(obj, parts...)
	return v, ok && err == nil
}

// Bounds of one CEL probe: an addon author writes the rule, and the one
// addon worker of every tenant runs it. celCostLimit is the API server's
// own per-expression runtime cost limit for CRD validation rules; a rule
// that needs more is cut off, as is one that runs longer than
// celTimeout.
const (
	maxCELRuleLength = 4 << 10
	celCostLimit     = 1_000_000
	celTimeout       = 100 * time.Millisecond
)

// evalCEL evaluates rule with the object as self, within celCostLimit and
// celTimeout.
func evalCEL(rule string, obj map[string]any) (bool, error) {
	return evalCELWithin(rule, obj, celTimeout)
}

func evalCELWithin(rule string, obj map[string]any, timeout time.Duration) (bool, error) {
	if len(rule) > maxCELRuleLength {
		return false, fmt.Errorf("the rule is %d bytes, more than %d", len(rule), maxCELRuleLength)
	}
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		return false, err
	}
	ast, iss := env.Compile(rule)
	if iss.Err() != nil {
		return false, iss.Err()
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, map[string]any{"self": obj})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the rule returns %T, not a bool", out.Value())
	}
	return b, nil
}
