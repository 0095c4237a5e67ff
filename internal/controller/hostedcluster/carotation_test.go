package hostedcluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestNextCARotation(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Minute))
	spec := func(token string) *hypershiftv1alpha1.CertificatesSpec {
		return &hypershiftv1alpha1.CertificatesSpec{RotateCA: token}
	}
	in := func(phase hypershiftv1alpha1.CARotationPhase, token string) *hypershiftv1alpha1.CARotationStatus {
		return &hypershiftv1alpha1.CARotationStatus{Phase: phase, Token: token, StartedAt: earlier, PhaseSince: earlier}
	}
	done := rotationObservation{done: true}
	waiting := rotationObservation{waiting: "the API server"}
	tests := []struct {
		name      string
		spec      *hypershiftv1alpha1.CertificatesSpec
		st        *hypershiftv1alpha1.CARotationStatus
		obs       rotationObservation
		wantPhase hypershiftv1alpha1.CARotationPhase // "": no status
		wantToken string
		moved     bool
	}{
		{name: "no spec, no rotation", spec: nil, st: nil, obs: done},
		{name: "empty token starts nothing", spec: spec(""), st: nil, obs: done},
		{name: "a token starts TrustBoth", spec: spec("a"), st: nil, obs: done, wantPhase: hypershiftv1alpha1.CARotationTrustBoth, wantToken: "a", moved: true},
		{name: "TrustBoth holds until observed", spec: spec("a"), st: in(hypershiftv1alpha1.CARotationTrustBoth, "a"), obs: waiting, wantPhase: hypershiftv1alpha1.CARotationTrustBoth, wantToken: "a"},
		{name: "TrustBoth → ReissueLeaves", spec: spec("a"), st: in(hypershiftv1alpha1.CARotationTrustBoth, "a"), obs: done, wantPhase: hypershiftv1alpha1.CARotationReissueLeaves, wantToken: "a", moved: true},
		{name: "ReissueLeaves → DistributeBundle", spec: spec("a"), st: in(hypershiftv1alpha1.CARotationReissueLeaves, "a"), obs: done, wantPhase: hypershiftv1alpha1.CARotationDistributeBundle, wantToken: "a", moved: true},
		{name: "DistributeBundle → DropOld", spec: spec("a"), st: in(hypershiftv1alpha1.CARotationDistributeBundle, "a"), obs: done, wantPhase: hypershiftv1alpha1.CARotationDropOld, wantToken: "a", moved: true},
		{name: "DropOld → Done", spec: spec("a"), st: in(hypershiftv1alpha1.CARotationDropOld, "a"), obs: done, wantPhase: hypershiftv1alpha1.CARotationDone, wantToken: "a", moved: true},
		{name: "a new token during a rotation waits for it to finish", spec: spec("b"), st: in(hypershiftv1alpha1.CARotationReissueLeaves, "a"), obs: waiting, wantPhase: hypershiftv1alpha1.CARotationReissueLeaves, wantToken: "a"},
		{name: "Done with the same token stays", spec: spec("a"), st: in(hypershiftv1alpha1.CARotationDone, "a"), obs: done, wantPhase: hypershiftv1alpha1.CARotationDone, wantToken: "a"},
		{name: "Done and a new token starts again", spec: spec("b"), st: in(hypershiftv1alpha1.CARotationDone, "a"), obs: done, wantPhase: hypershiftv1alpha1.CARotationTrustBoth, wantToken: "b", moved: true},
		{name: "a removed token does not undo a rotation", spec: nil, st: in(hypershiftv1alpha1.CARotationDropOld, "a"), obs: waiting, wantPhase: hypershiftv1alpha1.CARotationDropOld, wantToken: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nextCARotation(tt.spec, tt.st, tt.obs, now)
			if tt.wantPhase == "" {
				if got != nil {
					t.Fatalf("got %+v, want no rotation", got)
				}
				return
			}
			if got == nil || got.Phase != tt.wantPhase || got.Token != tt.wantToken {
				t.Fatalf("got %+v, want phase %s token %s", got, tt.wantPhase, tt.wantToken)
			}
			if moved := got.PhaseSince.Time.Equal(now); moved != tt.moved {
				t.Fatalf("phaseSince %v: moved=%v, want %v", got.PhaseSince, moved, tt.moved)
			}
			if (got.Phase == hypershiftv1alpha1.CARotationDone && tt.moved) != (got.CompletedAt != nil && got.CompletedAt.Time.Equal(now)) {
				t.Fatalf("completedAt %v for phase %s", got.CompletedAt, got.Phase)
			}
			if !tt.obs.done && tt.st != nil && got.Message != tt.obs.waiting && got.Phase != hypershiftv1alpha1.CARotationDone {
				t.Fatalf("message %q, want what it waits for", got.Message)
			}
			if tt.st != nil && tt.st.Phase != hypershiftv1alpha1.CARotationDone && got == tt.st {
				t.Fatal("the input status was modified in place")
			}
		})
	}
}
