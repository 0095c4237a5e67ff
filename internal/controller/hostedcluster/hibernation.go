package hostedcluster

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/hibernation"
)

// validateHibernation checks what CEL cannot: the cron expressions and the
// time zone, and that the runtime can wake a cluster on request.
func validateHibernation(hc *hypershiftv1alpha1.HostedCluster, supports Capabilities) error {
	h := hc.Spec.Hibernation
	if h == nil {
		return nil
	}
	if _, _, err := hibernation.ParseWindows(h.Schedules, h.TimeZone); err != nil {
		return err
	}
	if h.IdleAfter != nil && hc.Annotations[hypershiftv1alpha1.SingleProcessControlPlaneAnnotation] == "true" {
		return fmt.Errorf("spec.hibernation.idleAfter cannot be combined with annotation %s: waking on a request puts the endpoint proxy in front of a separate API server; remove one", hypershiftv1alpha1.SingleProcessControlPlaneAnnotation)
	}
	if h.IdleAfter != nil && !supports.WakeOnRequest {
		return errors.New("spec.hibernation.idleAfter is not supported by this operator's runtime: it runs control planes as pods, and waking on a request needs the process runtime's endpoint proxy; use spec.hibernation.enabled or schedules")
	}
	return nil
}

// decideHibernation is the HostedCluster controller's decision for the
// control plane, from spec.hibernation, the activity the control plane
// reports and the cluster's Hibernated condition; it asks for another
// pass when time alone changes the decision.
func decideHibernation(s *scope, hcp *hypershiftv1alpha1.HostedControlPlane, now time.Time) (*hypershiftv1alpha1.ControlPlaneHibernation, error) {
	spec := s.hc.Spec.Hibernation
	if spec == nil {
		return nil, nil
	}
	in := hibernation.Inputs{Spec: spec, Now: now, AwakeSince: awakeSince(s.hc, now)}
	if a := hcp.Status.Activity; a != nil {
		if a.LastActivityTime != nil {
			in.LastActivity = a.LastActivityTime.Time
		}
		in.Waiting = a.WaitingConnections
	}
	if c := meta.FindStatusCondition(s.hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String()); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == hypershiftv1alpha1.IdleHibernatedReason.String() {
		in.IdleAsleepSince = c.LastTransitionTime.Time
	}
	d, err := hibernation.Decide(in)
	if err != nil {
		return nil, err
	}
	if !d.Next.IsZero() {
		// A second late, so the pass lands after the edge.
		s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: d.Next.Sub(now) + time.Second})
	}
	out := &hypershiftv1alpha1.ControlPlaneHibernation{Hibernated: d.Hibernate, IdleAfter: spec.IdleAfter}
	if d.Hibernate {
		out.Reason = d.Reason
	}
	s.hibernationMessage = d.Message
	return out, nil
}

// awakeSince is when the idle clock of a running control plane starts: the
// later of when it last started running (its Hibernated condition last
// became False, else the cluster's creation) and when it last became
// Available. A control plane that is not Available yet is not idle: no
// client could have used it, so the clock starts now (a start slower than
// idleAfter would otherwise put it to sleep the moment it serves). Zero
// while it sleeps.
func awakeSince(hc *hypershiftv1alpha1.HostedCluster, now time.Time) time.Time {
	var started time.Time
	switch c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String()); {
	case c == nil || c.Status == metav1.ConditionUnknown:
		started = hc.CreationTimestamp.Time
	case c.Status == metav1.ConditionFalse:
		started = c.LastTransitionTime.Time
	default:
		return time.Time{}
	}
	avail := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Available.String())
	if avail == nil || avail.Status != metav1.ConditionTrue {
		return now
	}
	if avail.LastTransitionTime.After(started) {
		return avail.LastTransitionTime.Time
	}
	return started
}
