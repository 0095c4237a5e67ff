package hostedcluster_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
)

// waitRefused waits until hc reports ValidConfiguration=False, with the
// given reason unless it is empty, leaves hc's latest state in hc and
// returns the condition.
func waitRefused(t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster, reason hypershiftv1alpha1.ConditionReason) *metav1.Condition {
	t.Helper()
	key := client.ObjectKeyFromObject(hc)
	var cond *metav1.Condition
	testenv.Eventually(t, time.Minute, key.String()+" ValidConfiguration=False "+reason.String(), func() (bool, error) {
		err := c.Get(t.Context(), key, hc)
		cond = meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ValidConfiguration.String())
		return cond != nil && cond.Status == metav1.ConditionFalse && (reason == "" || cond.Reason == reason.String()), err
	})
	return cond
}
