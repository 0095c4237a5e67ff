// Package conditions has the small helpers the controllers share for
// metav1.Condition lists and paused reconciliation.
package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Set sets a condition, keeping its transition time when the status is
// unchanged.
func Set(conds *[]metav1.Condition, generation int64, typ string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             s,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: generation,
	})
}

// IsTrue reports whether the condition is present and True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// PausedFor says whether reconciliation is paused by a pausedUntil value
// ("true", or an RFC 3339 date in the future) and for how long; zero means
// indefinitely.
func PausedFor(pausedUntil *string, now time.Time) (bool, time.Duration) {
	if pausedUntil == nil || *pausedUntil == "" || *pausedUntil == "false" {
		return false, 0
	}
	if *pausedUntil == "true" {
		return true, 0
	}
	until, err := time.Parse(time.RFC3339, *pausedUntil)
	if err != nil || !until.After(now) {
		return false, 0
	}
	return true, until.Sub(now)
}

// SetPaused records paused or active reconciliation.
func SetPaused(conds *[]metav1.Condition, generation int64, paused bool, pausedUntil *string) {
	if paused {
		Set(conds, generation, hypershiftv1alpha1.ReconciliationActive, false,
			hypershiftv1alpha1.ReconciliationPausedReason, "Reconciliation paused until "+*pausedUntil)
		return
	}
	Set(conds, generation, hypershiftv1alpha1.ReconciliationActive, true,
		hypershiftv1alpha1.AsExpectedReason, "Reconciliation active")
}
