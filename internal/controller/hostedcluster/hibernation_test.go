package hostedcluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hibernation"
)

// TestIdleClock: the idle clock of a cluster starts when it serves, not
// when it starts; a cluster whose start takes longer than idleAfter does
// not go to sleep the moment it becomes Available.
func TestIdleClock(t *testing.T) {
	created := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	idleAfter := 30 * time.Second
	cond := func(typ hypershiftv1alpha1.ConditionType, status metav1.ConditionStatus, at time.Time) metav1.Condition {
		return metav1.Condition{Type: typ.String(), Status: status, LastTransitionTime: metav1.NewTime(at)}
	}
	cases := []struct {
		name          string
		conds         []metav1.Condition
		now           time.Time
		wantHibernate bool
		wantSince     time.Time
	}{
		{
			name:      "starting, past idleAfter since it began running",
			conds:     []metav1.Condition{cond(hypershiftv1alpha1.Hibernated, metav1.ConditionFalse, created.Add(time.Second)), cond(hypershiftv1alpha1.Available, metav1.ConditionFalse, created.Add(time.Second))},
			now:       created.Add(40 * time.Second),
			wantSince: created.Add(40 * time.Second),
		},
		{
			name:      "Available after a 34 s start, idle for 6 s",
			conds:     []metav1.Condition{cond(hypershiftv1alpha1.Hibernated, metav1.ConditionFalse, created.Add(time.Second)), cond(hypershiftv1alpha1.Available, metav1.ConditionTrue, created.Add(34*time.Second))},
			now:       created.Add(40 * time.Second),
			wantSince: created.Add(34 * time.Second),
		},
		{
			name:          "Available after a 34 s start, idle for idleAfter",
			conds:         []metav1.Condition{cond(hypershiftv1alpha1.Hibernated, metav1.ConditionFalse, created.Add(time.Second)), cond(hypershiftv1alpha1.Available, metav1.ConditionTrue, created.Add(34*time.Second))},
			now:           created.Add(64 * time.Second),
			wantHibernate: true,
			wantSince:     created.Add(34 * time.Second),
		},
		{
			name:          "resumed after being Available: the resume counts",
			conds:         []metav1.Condition{cond(hypershiftv1alpha1.Hibernated, metav1.ConditionFalse, created.Add(time.Hour)), cond(hypershiftv1alpha1.Available, metav1.ConditionTrue, created.Add(time.Minute))},
			now:           created.Add(time.Hour + 31*time.Second),
			wantHibernate: true,
			wantSince:     created.Add(time.Hour),
		},
		{
			name:      "no conditions yet",
			now:       created.Add(time.Hour),
			wantSince: created.Add(time.Hour),
		},
		{
			name:  "asleep",
			conds: []metav1.Condition{cond(hypershiftv1alpha1.Hibernated, metav1.ConditionTrue, created.Add(time.Minute))},
			now:   created.Add(time.Hour),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := &hypershiftv1alpha1.HostedCluster{}
			hc.CreationTimestamp = metav1.NewTime(created)
			hc.Status.Conditions = tc.conds
			since := awakeSince(hc, tc.now)
			if !since.Equal(tc.wantSince) {
				t.Fatalf("awakeSince = %s, want %s", since, tc.wantSince)
			}
			if since.IsZero() {
				return
			}
			d, err := hibernation.Decide(hibernation.Inputs{
				Spec:       &hypershiftv1alpha1.HibernationSpec{IdleAfter: &metav1.Duration{Duration: idleAfter}},
				AwakeSince: since, Now: tc.now,
			})
			if err != nil {
				t.Fatal(err)
			}
			if d.Hibernate != tc.wantHibernate {
				t.Fatalf("Hibernate = %v (%s), want %v", d.Hibernate, d.Message, tc.wantHibernate)
			}
		})
	}
}
