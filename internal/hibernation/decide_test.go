package hibernation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestPrev(t *testing.T) {
	tests := []struct {
		expr, tz, at, want string
	}{
		{"0 20 * * *", "UTC", "2026-11-24T21:00:00Z", "2026-11-24T20:00:00Z"},
		{"0 20 * * *", "UTC", "2026-11-24T20:00:00Z", "2026-11-24T20:00:00Z"}, // at the edge: fired
		{"0 20 * * *", "UTC", "2026-11-24T19:59:59Z", "2026-11-23T20:00:00Z"},
		{"*/15 * * * *", "UTC", "2026-11-24T10:14:59Z", "2026-11-24T10:00:00Z"},
		{"0 9 * * 1-5", "UTC", "2026-11-29T12:00:00Z", "2026-11-27T09:00:00Z"}, // Sunday → Friday
		{"0 0 29 2 *", "UTC", "2026-11-24T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"@monthly", "UTC", "2026-11-24T00:00:00Z", "2026-11-01T00:00:00Z"},
		// 20:00 in Berlin is 19:00 UTC in winter.
		{"0 20 * * *", "Europe/Berlin", "2026-11-24T19:30:00Z", "2026-11-24T19:00:00Z"},
		// A zone ahead of UTC: 08:00 Tokyo on the 25th is 23:00 UTC on the 24th.
		{"0 8 * * *", "Asia/Tokyo", "2026-11-24T23:30:00Z", "2026-11-24T23:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.expr+" "+tt.tz+" "+tt.at, func(t *testing.T) {
			s, err := ParseSchedule(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			loc, err := LoadLocation(tt.tz)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Prev(mustTime(t, tt.at).In(loc))
			if want := mustTime(t, tt.want); !got.Equal(want) {
				t.Errorf("Prev = %s, want %s", got.UTC().Format(time.RFC3339), tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	night := []hypershiftv1alpha1.HibernationSchedule{{Hibernate: "0 20 * * *", Resume: "0 7 * * *"}}
	idle := &metav1.Duration{Duration: 15 * time.Minute}
	tests := []struct {
		name            string
		spec            *hypershiftv1alpha1.HibernationSpec
		now             string
		lastActivity    string
		awakeSince      string
		idleAsleepSince string
		waiting         int32
		want            hypershiftv1alpha1.ConditionReason
		wantNext        string
		wantErr         string
	}{
		{name: "no spec", now: "2026-11-24T12:00:00Z", want: hypershiftv1alpha1.NotHibernatedReason},
		{
			name: "enabled", spec: &hypershiftv1alpha1.HibernationSpec{Enabled: true}, now: "2026-11-24T12:00:00Z",
			want: hypershiftv1alpha1.HibernatedReason,
		},
		{
			name: "inside the night window", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night}, now: "2026-11-24T23:00:00Z",
			want: hypershiftv1alpha1.ScheduledHibernationReason, wantNext: "2026-11-25T07:00:00Z",
		},
		{
			name: "after midnight, still inside", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night}, now: "2026-11-25T03:00:00Z",
			want: hypershiftv1alpha1.ScheduledHibernationReason, wantNext: "2026-11-25T07:00:00Z",
		},
		{
			name: "at the resume edge", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night}, now: "2026-11-25T07:00:00Z",
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-25T20:00:00Z",
		},
		{
			name: "at the hibernate edge", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night}, now: "2026-11-24T20:00:00Z",
			want: hypershiftv1alpha1.ScheduledHibernationReason, wantNext: "2026-11-25T07:00:00Z",
		},
		{
			name: "day time", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night}, now: "2026-11-24T12:00:00Z",
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-24T20:00:00Z",
		},
		{
			name: "time zone moves the window", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night, TimeZone: "America/New_York"},
			now:  "2026-11-24T23:00:00Z", // 18:00 in New York
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-25T01:00:00Z",
		},
		{
			name: "time zone: inside in New York", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night, TimeZone: "America/New_York"},
			now:  "2026-11-25T02:00:00Z", // 21:00 in New York
			want: hypershiftv1alpha1.ScheduledHibernationReason, wantNext: "2026-11-25T12:00:00Z",
		},
		{
			name: "DST: the window's edges follow the wall clock", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night, TimeZone: "Europe/Berlin"},
			now:  "2026-03-29T05:30:00Z", // 07:30 CEST, the night DST began
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-03-29T18:00:00Z",
		},
		{
			name: "idle for longer than idleAfter", spec: &hypershiftv1alpha1.HibernationSpec{IdleAfter: idle}, now: "2026-11-24T12:00:00Z",
			lastActivity: "2026-11-24T11:40:00Z", awakeSince: "2026-11-24T08:00:00Z", want: hypershiftv1alpha1.IdleHibernatedReason,
		},
		{
			name: "active recently", spec: &hypershiftv1alpha1.HibernationSpec{IdleAfter: idle}, now: "2026-11-24T12:00:00Z",
			lastActivity: "2026-11-24T11:50:00Z", awakeSince: "2026-11-24T08:00:00Z",
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-24T12:05:00Z",
		},
		{
			name: "resumed recently: idle counts from the resume", spec: &hypershiftv1alpha1.HibernationSpec{IdleAfter: idle}, now: "2026-11-24T12:00:00Z",
			lastActivity: "2026-11-24T08:00:00Z", awakeSince: "2026-11-24T11:55:00Z",
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-24T12:10:00Z",
		},
		{
			name: "a request inside a window wakes it when idleAfter is set",
			spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night, IdleAfter: idle}, now: "2026-11-24T23:00:00Z",
			lastActivity: "2026-11-24T22:58:00Z", want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-24T23:13:00Z",
		},
		{
			name: "activity before the window does not keep it awake",
			spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night, IdleAfter: idle}, now: "2026-11-24T20:01:00Z",
			lastActivity: "2026-11-24T19:59:00Z", want: hypershiftv1alpha1.ScheduledHibernationReason, wantNext: "2026-11-25T07:00:00Z",
		},
		{
			name: "idle-asleep: activity from before the sleep does not wake it", spec: &hypershiftv1alpha1.HibernationSpec{IdleAfter: idle}, now: "2026-11-24T12:00:00Z",
			lastActivity: "2026-11-24T11:59:00Z", idleAsleepSince: "2026-11-24T11:59:30Z", want: hypershiftv1alpha1.IdleHibernatedReason,
		},
		{
			name: "idle-asleep: a request after the sleep wakes it", spec: &hypershiftv1alpha1.HibernationSpec{IdleAfter: idle}, now: "2026-11-24T12:00:00Z",
			lastActivity: "2026-11-24T11:59:50Z", idleAsleepSince: "2026-11-24T11:59:30Z",
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-24T12:14:50Z",
		},
		{
			name: "idle-asleep: a held connection wakes it", spec: &hypershiftv1alpha1.HibernationSpec{IdleAfter: idle}, now: "2026-11-24T12:00:00Z",
			lastActivity: "2026-11-24T11:00:00Z", idleAsleepSince: "2026-11-24T11:59:55Z", waiting: 1,
			want: hypershiftv1alpha1.NotHibernatedReason, wantNext: "2026-11-24T12:15:00Z",
		},
		{
			name: "bad cron", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: []hypershiftv1alpha1.HibernationSchedule{{Hibernate: "0 25 * * *", Resume: "0 7 * * *"}}},
			now: "2026-11-24T12:00:00Z", wantErr: "spec.hibernation.schedules[0].hibernate",
		},
		{
			name: "@every refused", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: []hypershiftv1alpha1.HibernationSchedule{{Hibernate: "0 20 * * *", Resume: "@every 1h"}}},
			now: "2026-11-24T12:00:00Z", wantErr: "spec.hibernation.schedules[0].resume",
		},
		{
			name: "bad time zone", spec: &hypershiftv1alpha1.HibernationSpec{Schedules: night, TimeZone: "Mars/Olympus"},
			now: "2026-11-24T12:00:00Z", wantErr: "spec.hibernation.timeZone",
		},
	}
	parse := func(s string) time.Time {
		if s == "" {
			return time.Time{}
		}
		return mustTime(t, s)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(Inputs{
				Spec: tt.spec, Now: parse(tt.now), LastActivity: parse(tt.lastActivity), AwakeSince: parse(tt.awakeSince),
				IdleAsleepSince: parse(tt.idleAsleepSince), Waiting: tt.waiting,
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Reason != tt.want || d.Hibernate != (tt.want != hypershiftv1alpha1.NotHibernatedReason) {
				t.Errorf("decision = %v %s (%s), want %s", d.Hibernate, d.Reason, d.Message, tt.want)
			}
			if !d.Next.Equal(parse(tt.wantNext)) {
				t.Errorf("next = %s, want %s", d.Next.UTC().Format(time.RFC3339), tt.wantNext)
			}
		})
	}
}
