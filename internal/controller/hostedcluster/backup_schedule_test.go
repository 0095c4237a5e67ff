package hostedcluster

import (
	"strings"
	"testing"
	"time"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestDueTime(t *testing.T) {
	sched, err := parseBackupSchedule(&hypershiftv1alpha1.BackupSpec{Schedule: "*/10 * * * *"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(hm string) time.Time {
		ts, err := time.Parse("15:04", hm)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 11, 24, ts.Hour(), ts.Minute(), 0, 0, time.UTC)
	}
	for _, tc := range []struct {
		name            string
		last, now       time.Time
		wantDue, wantNx time.Time
	}{
		{"not due yet", at("03:00"), at("03:05"), time.Time{}, at("03:10")},
		{"due on the minute", at("03:00"), at("03:10"), at("03:10"), at("03:20")},
		{"missed times give one backup, the latest", at("03:00"), at("04:15"), at("04:10"), at("04:20")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, next := dueTime(sched, tc.last, tc.now)
			if !due.Equal(tc.wantDue) || !next.Equal(tc.wantNx) {
				t.Errorf("dueTime(%s, %s) = %s, %s; want %s, %s", tc.last, tc.now, due, next, tc.wantDue, tc.wantNx)
			}
		})
	}
}

func TestParseBackupSchedule(t *testing.T) {
	berlin, err := parseBackupSchedule(&hypershiftv1alpha1.BackupSpec{Schedule: "0 3 * * *", TimeZone: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	// 03:00 in Berlin is 02:00 UTC in winter.
	if got := berlin.Next(time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("next 03:00 Europe/Berlin = %s", got.UTC())
	}
	for _, tc := range []struct {
		spec hypershiftv1alpha1.BackupSpec
		want string
	}{
		{hypershiftv1alpha1.BackupSpec{Schedule: "61 * * * *"}, "spec.backup.schedule"},
		{hypershiftv1alpha1.BackupSpec{Schedule: "0 3 * * *", TimeZone: "Mars/Olympus"}, "spec.backup.timeZone"},
	} {
		if _, err := parseBackupSchedule(&tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.spec, err, tc.want)
		}
	}
}
