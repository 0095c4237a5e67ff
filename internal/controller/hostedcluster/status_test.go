package hostedcluster

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestMirrorControlPlane(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Hour))
	cond := func(status metav1.ConditionStatus, reason hypershiftv1alpha1.ConditionReason, msg string, at metav1.Time) metav1.Condition {
		return metav1.Condition{Type: hypershiftv1alpha1.Available.String(), Status: status, Reason: reason.String(), Message: msg, LastTransitionTime: at}
	}
	tests := []struct {
		name     string
		hc, hcp  []metav1.Condition
		want     metav1.Condition
		wantTime func(metav1.Time) bool
	}{
		{
			name: "status unchanged keeps the time, takes the new message",
			hc:   []metav1.Condition{cond(metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "old", t0)},
			hcp:  []metav1.Condition{cond(metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "new", t1)},
			want: cond(metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "new", t0),
		},
		{
			name: "status changed takes the control plane's time",
			hc:   []metav1.Condition{cond(metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "up", t0)},
			hcp:  []metav1.Condition{cond(metav1.ConditionFalse, hypershiftv1alpha1.WaitingForComponentsReason, "down", t1)},
			want: cond(metav1.ConditionFalse, hypershiftv1alpha1.WaitingForComponentsReason, "down", t1),
		},
		{
			name: "first report takes the control plane's time",
			hcp:  []metav1.Condition{cond(metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "up", t1)},
			want: cond(metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "up", t1),
		},
		{
			name: "not reported yet is Unknown",
			want: cond(metav1.ConditionUnknown, hypershiftv1alpha1.WaitingForComponentsReason,
				"The hosted control plane has not reported Available yet", metav1.Time{}),
			wantTime: func(at metav1.Time) bool { return !at.IsZero() },
		},
		{
			name: "still not reported keeps the Unknown's time",
			hc: []metav1.Condition{cond(metav1.ConditionUnknown, hypershiftv1alpha1.WaitingForComponentsReason,
				"The hosted control plane has not reported Available yet", t0)},
			want: cond(metav1.ConditionUnknown, hypershiftv1alpha1.WaitingForComponentsReason,
				"The hosted control plane has not reported Available yet", t0),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tc.hc...)
			mirrorControlPlane(&conds, 7, tc.hcp)
			got := meta.FindStatusCondition(conds, hypershiftv1alpha1.Available.String())
			if got == nil {
				t.Fatalf("no Available condition in %+v", conds)
			}
			if got.Status != tc.want.Status || got.Reason != tc.want.Reason || got.Message != tc.want.Message || got.ObservedGeneration != 7 {
				t.Errorf("Available = %s/%s %q (generation %d), want %s/%s %q (generation 7)",
					got.Status, got.Reason, got.Message, got.ObservedGeneration, tc.want.Status, tc.want.Reason, tc.want.Message)
			}
			timeOK := got.LastTransitionTime.Equal(&tc.want.LastTransitionTime)
			if tc.wantTime != nil {
				timeOK = tc.wantTime(got.LastTransitionTime)
			}
			if !timeOK {
				t.Errorf("lastTransitionTime = %s, want %s", got.LastTransitionTime, tc.want.LastTransitionTime)
			}
			// Every mirrored type is reported, Unknown when the control
			// plane has not said.
			for _, typ := range mirrored {
				if c := meta.FindStatusCondition(conds, typ.String()); c == nil {
					t.Errorf("%s not reported", typ)
				} else if meta.FindStatusCondition(tc.hcp, typ.String()) == nil && c.Status != metav1.ConditionUnknown {
					t.Errorf("%s = %s, want Unknown: the control plane has not reported it", typ, c.Status)
				}
			}
		})
	}
}
