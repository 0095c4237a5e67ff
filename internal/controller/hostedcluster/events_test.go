package hostedcluster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// TestAvailableFalseIsAWarningOnlyWhenLost: a cluster that is still coming
// up (Available Unknown or not reported, then False) emits Normal events;
// only a cluster that was Available and is no longer emits a Warning.
func TestAvailableFalseIsAWarningOnlyWhenLost(t *testing.T) {
	cases := []struct {
		name   string
		before []metav1.Condition
		want   string
	}{
		{"first report", nil, "Normal "},
		{"from Unknown while starting", []metav1.Condition{{Type: hypershiftv1alpha1.Available.String(), Status: metav1.ConditionUnknown}}, "Normal "},
		{"lost", []metav1.Condition{{Type: hypershiftv1alpha1.Available.String(), Status: metav1.ConditionTrue}}, "Warning "},
	}
	for _, tc := range cases {
		rec := events.NewFakeRecorder(4)
		r := &Reconciler{Recorder: rec}
		before := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
		before.Status.Conditions = tc.before
		after := before.DeepCopy()
		after.Status.Conditions = []metav1.Condition{{
			Type: hypershiftv1alpha1.Available.String(), Status: metav1.ConditionFalse,
			Reason: hypershiftv1alpha1.WaitingForComponentsReason.String(), Message: "Waiting for etcd and kube-apiserver to be ready",
		}}
		r.recordTransitions(before, after)
		select {
		case got := <-rec.Events:
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("%s: event %q, want type %q", tc.name, got, strings.TrimSpace(tc.want))
			}
		default:
			t.Errorf("%s: no event", tc.name)
		}
	}
}
