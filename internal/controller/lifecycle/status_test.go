package lifecycle_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/lifecycle"
)

func status(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMergeStatus: a pass's changes land on the server's status condition
// by condition and field by field; what the pass did not touch stays as the
// server has it.
func TestMergeStatus(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		before, after, current, merged string
	}{{
		name:    "a condition the server gained meanwhile is kept",
		before:  `{"conditions":[{"type":"A","status":"True"}]}`,
		after:   `{"conditions":[{"type":"A","status":"False"},{"type":"C","status":"True"}]}`,
		current: `{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"}]}`,
		merged:  `{"conditions":[{"type":"A","status":"False"},{"type":"B","status":"True"},{"type":"C","status":"True"}]}`,
	}, {
		name:    "a condition the pass removed goes, one it left alone stays",
		before:  `{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"}]}`,
		after:   `{"conditions":[{"type":"B","status":"True"}]}`,
		current: `{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"False"}]}`,
		merged:  `{"conditions":[{"type":"B","status":"False"}]}`,
	}, {
		name:    "the same status keeps the server's transition time",
		before:  `{"conditions":[]}`,
		after:   `{"conditions":[{"type":"A","status":"True","reason":"New","lastTransitionTime":"2026-01-02T00:00:00Z"}]}`,
		current: `{"conditions":[{"type":"A","status":"True","reason":"Old","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
		merged:  `{"conditions":[{"type":"A","status":"True","reason":"New","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
	}, {
		name:    "a status other than the server's transitions now, not at the stale pass's time",
		before:  `{"conditions":[{"type":"A","status":"False","message":"old","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
		after:   `{"conditions":[{"type":"A","status":"False","message":"new","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`,
		current: `{"conditions":[{"type":"A","status":"True","lastTransitionTime":"2026-01-02T00:00:00Z"}]}`,
		merged:  `{"conditions":[{"type":"A","status":"False","message":"new","lastTransitionTime":"2026-01-03T04:05:06Z"}]}`,
	}, {
		name:    "fields: changed ones are written, removed ones go, others stay",
		before:  `{"version":"1.36","replicas":1,"gone":"x"}`,
		after:   `{"version":"1.37","replicas":1}`,
		current: `{"version":"1.36","replicas":2,"gone":"x","lastScheduleTime":"t"}`,
		merged:  `{"version":"1.37","replicas":2,"lastScheduleTime":"t"}`,
	}, {
		name:    "no conditions left means no conditions field",
		before:  `{"conditions":[{"type":"A","status":"True"}]}`,
		after:   `{}`,
		current: `{"conditions":[{"type":"A","status":"True"}],"x":1}`,
		merged:  `{"x":1}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 3, 4, 5, 6, 0, time.UTC)
			got := lifecycle.MergeStatus(status(t, tc.before), status(t, tc.after), status(t, tc.current), now)
			if want := status(t, tc.merged); !equality.Semantic.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				t.Errorf("merged\n got %s\nwant %s", g, tc.merged)
			}
		})
	}
}

// TestStatusPatchFromStaleCopy: a pass that starts from a copy older than
// the server's (here: read before another pass wrote a condition and a
// field) conflicts on its resourceVersion, then carries its own changes
// over to the server's object instead of overwriting the list.
func TestStatusPatchFromStaleCopy(t *testing.T) {
	env, np := startWithPool(t)
	c, ctx := env.Client, t.Context()
	key := client.ObjectKeyFromObject(np)
	read := func() *hypershiftv1alpha1.NodePool {
		got := &hypershiftv1alpha1.NodePool{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	cond := func(typ hypershiftv1alpha1.ConditionType, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ.String(), Status: status, Reason: "Test", LastTransitionTime: metav1.NewTime(time.Now())}
	}

	stale := read()
	// Another pass writes a condition and a field.
	fresh := read()
	p, err := lifecycle.NewStatusPatch(fresh)
	if err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&fresh.Status.Conditions, cond(hypershiftv1alpha1.NodePoolAllNodesHealthy, metav1.ConditionTrue))
	fresh.Status.Version = "1.37.1"
	if err := p.Apply(ctx, c); err != nil {
		t.Fatal(err)
	}

	// The stale pass sets a different condition.
	p, err = lifecycle.NewStatusPatch(stale)
	if err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&stale.Status.Conditions, cond(hypershiftv1alpha1.NodePoolReady, metav1.ConditionFalse))
	stale.Status.Replicas = 2
	if err := p.Apply(ctx, c); err != nil {
		t.Fatalf("apply from a stale copy: %v", err)
	}
	got := read()
	if !meta.IsStatusConditionTrue(got.Status.Conditions, hypershiftv1alpha1.NodePoolAllNodesHealthy.String()) {
		t.Errorf("the other pass's condition was dropped: %+v", got.Status.Conditions)
	}
	if !meta.IsStatusConditionFalse(got.Status.Conditions, hypershiftv1alpha1.NodePoolReady.String()) {
		t.Errorf("the stale pass's condition is missing: %+v", got.Status.Conditions)
	}
	if got.Status.Version != "1.37.1" || got.Status.Replicas != 2 {
		t.Errorf("fields: version %q (want the other pass's 1.37.1), replicas %d (want 2)", got.Status.Version, got.Status.Replicas)
	}
}

// TestStatusPatchSkipsARecreatedObject: a pass over an object that was
// deleted and made again under the same name meanwhile writes nothing to
// the new one.
func TestStatusPatchSkipsARecreatedObject(t *testing.T) {
	env, old := startWithPool(t)
	c, ctx := env.Client, t.Context()
	p, err := lifecycle.NewStatusPatch(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, newPool()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, newPool()); err != nil {
		t.Fatal(err)
	}
	meta.SetStatusCondition(&old.Status.Conditions, metav1.Condition{
		Type: hypershiftv1alpha1.NodePoolReady.String(), Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now(),
	})
	if err := p.Apply(ctx, c); err != nil {
		t.Fatalf("apply over a re-created object: %v", err)
	}
	got := &hypershiftv1alpha1.NodePool{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	if got.UID == old.UID {
		t.Fatal("the pool was not made again")
	}
	if len(got.Status.Conditions) != 0 {
		t.Errorf("the old pool's pass wrote into the new one: %+v", got.Status.Conditions)
	}
}
