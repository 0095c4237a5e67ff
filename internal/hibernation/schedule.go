// Package hibernation decides when a hosted cluster's control plane sleeps:
// from spec.hibernation (enabled, cron schedules in a time zone, idleAfter)
// and the activity its endpoint proxy saw. Decide is a pure function of
// those and the time.
package hibernation

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // time zones without the host's zoneinfo

	"github.com/robfig/cron/v3"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Schedule is one parsed cron expression.
type Schedule struct {
	expr  string
	sched cron.Schedule
}

// ParseSchedule parses a standard 5-field cron expression or a descriptor
// (@daily, …). @every and CRON_TZ= are refused: a window needs fixed times,
// and the time zone is spec.hibernation.timeZone.
func ParseSchedule(expr string) (Schedule, error) {
	e := strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(e, "@every"):
		return Schedule{}, errors.New("@every is not supported: give fixed times, such as '0 20 * * *'")
	case strings.HasPrefix(e, "CRON_TZ=") || strings.HasPrefix(e, "TZ="):
		return Schedule{}, errors.New("a time zone prefix is not supported: set spec.hibernation.timeZone")
	}
	s, err := cron.ParseStandard(e)
	if err != nil {
		return Schedule{}, err
	}
	return Schedule{expr: e, sched: s}, nil
}

// Next is the first time after t the schedule fires, in t's location.
func (s Schedule) Next(t time.Time) time.Time { return s.sched.Next(t) }

// maxLookBack bounds Prev: a schedule that fires less than once in it (the
// 29th of February fires at least every 8 years) has not fired.
const maxLookBack = 9 * 366 * 24 * time.Hour

// Prev is the last time at or before t the schedule fired, in t's
// location; zero when it did not fire within maxLookBack. cron offers only
// Next, which is monotonic: the edge sought is Next(s) for the latest s
// whose Next(s) is not after t, found by a widening then halving search.
func (s Schedule) Prev(t time.Time) time.Time {
	// Next works in whole seconds (cron's minimum unit is the minute).
	t = t.Truncate(time.Second)
	firesBy := func(from time.Time) bool {
		n := s.sched.Next(from)
		return !n.IsZero() && !n.After(t)
	}
	width := time.Minute
	for !firesBy(t.Add(-width)) {
		if width > maxLookBack {
			return time.Time{}
		}
		width *= 2
	}
	lo, hi := t.Add(-width), t // firesBy(lo); the answer is Next(s) for s in [lo, hi)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if mid.Equal(lo) {
			break
		}
		if firesBy(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return s.sched.Next(lo)
}

// Window is a parsed hibernate/resume pair.
type Window struct {
	Hibernate, Resume Schedule
}

// ParseWindows parses spec.hibernation.schedules and the time zone; errors
// name the field.
func ParseWindows(schedules []hypershiftv1alpha1.HibernationSchedule, timeZone string) ([]Window, *time.Location, error) {
	loc, err := LoadLocation(timeZone)
	if err != nil {
		return nil, nil, err
	}
	out := make([]Window, 0, len(schedules))
	for i, s := range schedules {
		h, err := ParseSchedule(s.Hibernate)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.hibernation.schedules[%d].hibernate %q: %w", i, s.Hibernate, err)
		}
		r, err := ParseSchedule(s.Resume)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.hibernation.schedules[%d].resume %q: %w", i, s.Resume, err)
		}
		out = append(out, Window{Hibernate: h, Resume: r})
	}
	return out, loc, nil
}

// LoadLocation reads spec.hibernation.timeZone; empty is UTC.
func LoadLocation(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("spec.hibernation.timeZone %q is not a known IANA time zone (such as UTC or Europe/Berlin): %w", name, err)
	}
	return loc, nil
}
