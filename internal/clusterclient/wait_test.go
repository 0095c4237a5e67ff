package clusterclient

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// TestCannotRun: `create cluster --wait` stops at once, with the operator's
// reason, when this generation of the spec was judged invalid — not when an
// older generation was, nor while the cluster is only starting.
func TestCannotRun(t *testing.T) {
	conflict := metav1.Condition{
		Type: hypershiftv1alpha1.ValidConfiguration.String(), Status: metav1.ConditionFalse, ObservedGeneration: 2,
		Reason:  hypershiftv1alpha1.ControlPlaneNamespaceConflictReason.String(),
		Message: "control-plane namespace a-b-c belongs to HostedCluster a/b-c",
	}
	cases := []struct {
		name       string
		generation int64
		conditions []metav1.Condition
		want       string
	}{
		{"no status yet", 2, nil, ""},
		{"valid", 2, []metav1.Condition{{Type: hypershiftv1alpha1.ValidConfiguration.String(), Status: metav1.ConditionTrue, ObservedGeneration: 2}}, ""},
		{"invalid for an older generation", 3, []metav1.Condition{conflict}, ""},
		{"invalid for this generation", 2, []metav1.Condition{conflict}, "hosted cluster a-b/c cannot run (ControlPlaneNamespaceConflict): control-plane namespace a-b-c belongs to HostedCluster a/b-c"},
	}
	for _, tc := range cases {
		hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a-b", Name: "c", Generation: tc.generation}}
		hc.Status.Conditions = tc.conditions
		err := CannotRun(hc)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
