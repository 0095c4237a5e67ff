// Package conditions has the small helpers the controllers share for
// metav1.Condition lists and paused reconciliation.
package conditions

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Set sets a condition True or False, keeping its transition time when the
// status is unchanged.
func Set(conds *[]metav1.Condition, generation int64, typ hypershiftv1alpha1.ConditionType, status bool, reason hypershiftv1alpha1.ConditionReason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	Apply(conds, generation, metav1.Condition{Type: typ.String(), Status: s, Reason: reason.String(), Message: message})
}

// SetUnknown says a condition cannot be told yet (what it depends on has
// not reported).
func SetUnknown(conds *[]metav1.Condition, generation int64, typ hypershiftv1alpha1.ConditionType, reason hypershiftv1alpha1.ConditionReason, message string) {
	Apply(conds, generation, metav1.Condition{Type: typ.String(), Status: metav1.ConditionUnknown, Reason: reason.String(), Message: message})
}

// Apply sets derived conditions, stamped with the generation they were
// derived from. A condition whose status does not change keeps its
// lastTransitionTime; one that changes takes the condition's own
// LastTransitionTime when set (see Mirror), else now.
func Apply(conds *[]metav1.Condition, generation int64, derived ...metav1.Condition) {
	for _, c := range derived {
		c.ObservedGeneration = generation
		meta.SetStatusCondition(conds, c)
	}
}

// Mirror reports another object's condition as one of this object's. When
// the status changes, the mirror takes the source's lastTransitionTime, so
// it says when the source changed rather than when this controller noticed;
// when it does not, the time is kept. A source that has no such condition
// yet is mirrored as Unknown with the given reason and message.
func Mirror(conds *[]metav1.Condition, generation int64, typ hypershiftv1alpha1.ConditionType, source []metav1.Condition, unknownReason hypershiftv1alpha1.ConditionReason, unknownMessage string) {
	src := meta.FindStatusCondition(source, typ.String())
	if src == nil {
		SetUnknown(conds, generation, typ, unknownReason, unknownMessage)
		return
	}
	Apply(conds, generation, metav1.Condition{
		Type: typ.String(), Status: src.Status, Reason: src.Reason, Message: src.Message,
		LastTransitionTime: src.LastTransitionTime,
	})
}

// IsTrue reports whether the condition is present and True.
func IsTrue(conds []metav1.Condition, typ hypershiftv1alpha1.ConditionType) bool {
	return meta.IsStatusConditionTrue(conds, typ.String())
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
	Apply(conds, generation, Paused(paused, pausedUntil))
}

// Paused is the ReconciliationActive condition for a paused or active
// object.
func Paused(paused bool, pausedUntil *string) metav1.Condition {
	if paused {
		return metav1.Condition{
			Type: hypershiftv1alpha1.ReconciliationActive.String(), Status: metav1.ConditionFalse,
			Reason: hypershiftv1alpha1.ReconciliationPausedReason.String(), Message: "Reconciliation paused until " + *pausedUntil,
		}
	}
	return metav1.Condition{
		Type: hypershiftv1alpha1.ReconciliationActive.String(), Status: metav1.ConditionTrue,
		Reason: hypershiftv1alpha1.AsExpectedReason.String(), Message: "Reconciliation active",
	}
}
