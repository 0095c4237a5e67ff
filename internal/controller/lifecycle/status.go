package lifecycle

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusPatch remembers an object's status so that, at the end of a pass,
// exactly what the pass changed in it is written to the status subresource.
// Only status is compared: a finalizer update in between (which changes
// metadata) does not leak into the patch.
//
// The write is guarded by the object's resourceVersion. A pass can start
// from a cached copy that is behind the server — most often one that lacks
// what the previous pass wrote — and an unguarded merge patch would then
// replace the whole conditions list with the stale one, dropping conditions
// it never touched. On a conflict the changes are carried over to the
// object as the server has it: each condition type the pass set, changed or
// removed, and each top-level status field it changed; everything else is
// left as the server has it. This is Cluster API's patch helper, narrowed to
// status.
type StatusPatch struct {
	obj    client.Object
	before map[string]any
}

// conflictBackoff bounds the re-reads after a conflict. The reads go through
// the caller's client, usually the manager's cache, which may need a few
// milliseconds to catch up with the write that caused the conflict.
var conflictBackoff = wait.Backoff{Steps: 8, Duration: 20 * time.Millisecond, Factor: 2, Jitter: 0.1}

// NewStatusPatch records obj's status as it is now.
func NewStatusPatch(obj client.Object) (*StatusPatch, error) {
	before, err := statusOf(obj)
	if err != nil {
		return nil, err
	}
	return &StatusPatch{obj: obj, before: before}, nil
}

// Apply writes the status changes made since NewStatusPatch; nothing when
// there are none. An object already gone is not an error: the delete path
// patches after the finalizer is removed.
func (p *StatusPatch) Apply(ctx context.Context, c client.Client) error {
	key := client.ObjectKeyFromObject(p.obj)
	after, err := statusOf(p.obj)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(after, p.before) {
		return nil
	}
	// First try: the object as the pass saw it, with the old status as the
	// base, so the patch holds status fields and the resourceVersion only.
	err = patchStatus(ctx, c, p.obj, p.before)
	backoff := conflictBackoff
	for attempt := 0; apierrors.IsConflict(err) && attempt < conflictBackoff.Steps; attempt++ {
		select {
		case <-ctx.Done():
			return fmt.Errorf("patch status of %s: %w", key, ctx.Err())
		case <-time.After(backoff.Step()):
		}
		latest, ok := p.obj.DeepCopyObject().(client.Object)
		if !ok {
			return fmt.Errorf("status of %s: %T is not a client.Object", key, p.obj)
		}
		if err = c.Get(ctx, key, latest); err != nil {
			break
		}
		// An object deleted and made again under the same name is not the
		// one this pass looked at: its changes do not belong there.
		if latest.GetUID() != p.obj.GetUID() {
			return nil
		}
		err = p.carryOver(ctx, c, latest, after)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of %s: %w", key, err)
	}
	return nil
}

// carryOver writes the pass's changes (before → after) onto latest.
func (p *StatusPatch) carryOver(ctx context.Context, c client.Client, latest client.Object, after map[string]any) error {
	current, err := statusOf(latest)
	if err != nil {
		return err
	}
	merged := MergeStatus(p.before, after, current, time.Now())
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(latest)
	if err != nil {
		return err
	}
	u["status"] = merged
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, latest); err != nil {
		return err
	}
	return patchStatus(ctx, c, latest, current)
}

// patchStatus patches obj's status from base (a status map) to what obj
// holds, guarded by obj's resourceVersion.
func patchStatus(ctx context.Context, c client.Client, obj client.Object, base map[string]any) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	if base == nil {
		delete(u, "status")
	} else {
		u["status"] = runtime.DeepCopyJSONValue(base)
	}
	from := &unstructured.Unstructured{Object: u}
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(from, client.MergeFromWithOptimisticLock{}))
}

// MergeStatus returns current with the changes from before to after: the
// conditions whose type the change set, changed or removed are taken from
// after (keeping current's lastTransitionTime where the status is the
// same, and now where it differs from current's), the others stay as
// current has them; any other top-level field that changed is taken from
// after (or removed), the rest stays as current has it.
func MergeStatus(before, after, current map[string]any, now time.Time) map[string]any {
	out := map[string]any{}
	for k, v := range current {
		out[k] = runtime.DeepCopyJSONValue(v)
	}
	for _, k := range keysOf(before, after) {
		if k == "conditions" {
			continue
		}
		b, inBefore := before[k]
		a, inAfter := after[k]
		switch {
		case inBefore == inAfter && equality.Semantic.DeepEqual(a, b):
		case !inAfter:
			delete(out, k)
		default:
			out[k] = runtime.DeepCopyJSONValue(a)
		}
	}
	conds := mergeConditions(asList(before["conditions"]), asList(after["conditions"]), asList(current["conditions"]), now)
	if len(conds) == 0 {
		delete(out, "conditions")
	} else {
		out["conditions"] = conds
	}
	return out
}

// mergeConditions applies the per-type changes from before to after onto
// current, keeping current's order and appending new types in after's.
func mergeConditions(before, after, current []any, now time.Time) []any {
	byType := func(l []any) map[string]any {
		m := map[string]any{}
		for _, c := range l {
			if t, ok := conditionType(c); ok {
				m[t] = c
			}
		}
		return m
	}
	b, a := byType(before), byType(after)
	changed := func(t string) bool {
		bc, inB := b[t]
		ac, inA := a[t]
		return inB != inA || !equality.Semantic.DeepEqual(bc, ac)
	}
	var out []any
	seen := map[string]bool{}
	for _, c := range current {
		t, ok := conditionType(c)
		if !ok {
			continue
		}
		seen[t] = true
		switch ac, inA := a[t]; {
		case !changed(t):
			out = append(out, runtime.DeepCopyJSONValue(c))
		case inA:
			out = append(out, transitionTime(ac, c, now))
		}
	}
	for _, c := range after {
		if t, ok := conditionType(c); ok && !seen[t] && changed(t) {
			out = append(out, runtime.DeepCopyJSONValue(c))
		}
	}
	return out
}

// transitionTime returns a copy of next with its lastTransitionTime judged
// against cur, the server's: the same status keeps cur's time (it did not
// transition again); another status transitions now, whatever time the
// stale pass carried (it may be older than cur's).
func transitionTime(next, cur any, now time.Time) any {
	out := runtime.DeepCopyJSONValue(next)
	n, okN := out.(map[string]any)
	c, okC := cur.(map[string]any)
	if !okN || !okC {
		return out
	}
	switch {
	case n["status"] == c["status"] && c["lastTransitionTime"] != nil:
		n["lastTransitionTime"] = c["lastTransitionTime"]
	case n["status"] != c["status"] && n["lastTransitionTime"] != nil:
		n["lastTransitionTime"] = now.UTC().Format(time.RFC3339)
	}
	return out
}

func conditionType(c any) (string, bool) {
	m, ok := c.(map[string]any)
	if !ok {
		return "", false
	}
	t, ok := m["type"].(string)
	return t, ok
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func keysOf(maps ...map[string]any) []string {
	var keys []string
	seen := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

func statusOf(obj client.Object) (map[string]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	s, _ := runtime.DeepCopyJSONValue(u["status"]).(map[string]any)
	return s, nil
}
