package hibernation

import (
	"fmt"
	"time"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Inputs are what the decision is made from.
type Inputs struct {
	// Spec is spec.hibernation; nil: the cluster never sleeps.
	Spec *hypershiftv1alpha1.HibernationSpec
	// LastActivity is the latest client activity the endpoint proxy saw;
	// zero when none.
	LastActivity time.Time
	// AwakeSince is when the control plane last started running (created
	// or resumed); zero while it sleeps. Idle time counts from it at the
	// earliest, so a resumed cluster gets idleAfter before it sleeps again.
	AwakeSince time.Time
	// IdleAsleepSince is when the control plane went to sleep for being
	// idle (its Hibernated condition True with reason IdleHibernated);
	// zero otherwise. Only activity after it wakes the control plane:
	// activity from before that the status had not caught up with yet is
	// not a request to a sleeping cluster.
	IdleAsleepSince time.Time
	// Waiting counts connections the endpoint proxy holds: a wake request.
	Waiting int32
	// Now is the time of the decision.
	Now time.Time
}

// Decision is whether the control plane sleeps now.
type Decision struct {
	Hibernate bool
	// Reason is why it sleeps (HibernatedReason, ScheduledHibernationReason,
	// IdleHibernatedReason), NotHibernatedReason otherwise.
	Reason  hypershiftv1alpha1.ConditionReason
	Message string
	// Next is the soonest the decision can change by time alone (a
	// schedule's next edge, the idle deadline); zero when only a change of
	// the inputs can change it.
	Next time.Time
}

// Decide says whether the control plane sleeps at in.Now:
//
//   - spec.hibernation.enabled: asleep (Hibernated).
//   - inside a schedule window (its hibernate edge fired later than its
//     resume edge): asleep (ScheduledHibernation), unless idleAfter is set
//     and a client came after the window opened: a request wakes it, and
//     idleness puts it back to sleep.
//   - idleAfter set and no activity for idleAfter since the later of the
//     last activity and AwakeSince: asleep (IdleHibernated), until a
//     connection is held or activity comes after IdleAsleepSince.
//
// An error names the field that cannot be read.
func Decide(in Inputs) (Decision, error) {
	awake := Decision{Reason: hypershiftv1alpha1.NotHibernatedReason, Message: "The control plane runs"}
	spec := in.Spec
	if spec == nil {
		return awake, nil
	}
	windows, loc, err := ParseWindows(spec.Schedules, spec.TimeZone)
	if err != nil {
		return Decision{}, err
	}
	if spec.Enabled {
		return Decision{
			Hibernate: true, Reason: hypershiftv1alpha1.HibernatedReason,
			Message: "spec.hibernation.enabled is true: set it false (hypershift resume cluster) to resume",
		}, nil
	}
	now := in.Now.In(loc)
	window := openWindow(windows, now)
	next, windowStart, windowEnd := window.next, window.start, window.end
	activity := latestActivity(in)
	idle := spec.IdleAfter != nil && spec.IdleAfter.Duration > 0
	if !windowStart.IsZero() && (!idle || !activity.After(windowStart)) {
		msg := fmt.Sprintf("Inside a window of spec.hibernation.schedules since %s", windowStart.Format(time.RFC3339))
		if !windowEnd.IsZero() {
			msg += fmt.Sprintf(", resuming at %s", windowEnd.Format(time.RFC3339))
		}
		return Decision{Hibernate: true, Reason: hypershiftv1alpha1.ScheduledHibernationReason, Message: msg, Next: next}, nil
	}
	if idle {
		deadline := activity.Add(spec.IdleAfter.Duration)
		stillIdle := !in.IdleAsleepSince.IsZero() && in.Waiting == 0 && !in.LastActivity.After(in.IdleAsleepSince)
		if stillIdle || !now.Before(deadline) {
			return Decision{
				Hibernate: true, Reason: hypershiftv1alpha1.IdleHibernatedReason,
				Message: fmt.Sprintf("No client used the API endpoint for spec.hibernation.idleAfter (%s) since %s; the next request wakes it",
					spec.IdleAfter.Duration, activity.In(loc).Format(time.RFC3339)),
				Next: next,
			}, nil
		}
		if next.IsZero() || deadline.Before(next) {
			next = deadline.In(loc)
		}
	}
	awake.Next = next
	return awake, nil
}

// window is the schedule window open at a time, if any, and the next edge
// of any schedule.
type window struct {
	// start is when the open window opened (zero: none is open); end when
	// it closes.
	start, end time.Time
	next       time.Time
}

// openWindow finds the window open at now: the latest one whose hibernate
// edge fired after its resume edge.
func openWindow(windows []Window, now time.Time) window {
	var out window
	for _, w := range windows {
		for _, t := range []time.Time{w.Hibernate.Next(now), w.Resume.Next(now)} {
			if !t.IsZero() && (out.next.IsZero() || t.Before(out.next)) {
				out.next = t
			}
		}
		h, r := w.Hibernate.Prev(now), w.Resume.Prev(now)
		if !h.IsZero() && h.After(r) && h.After(out.start) {
			out.start, out.end = h, w.Resume.Next(now)
		}
	}
	return out
}

// latestActivity is when a client last used the cluster, as far as idleness
// goes: its last activity, the control plane's last start, or now while a
// client waits.
func latestActivity(in Inputs) time.Time {
	if in.Waiting > 0 {
		return in.Now
	}
	if in.AwakeSince.After(in.LastActivity) {
		return in.AwakeSince
	}
	return in.LastActivity
}
