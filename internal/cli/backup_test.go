package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestBackupOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    backupOptions
		want string
	}{
		{backupOptions{to: "file:///b/a.bak", keyFile: key}, "--name is required"},
		{backupOptions{name: "a", keyFile: key}, "--to is required"},
		{backupOptions{name: "a", to: "ftp://bucket/a.bak", keyFile: key}, "scheme ftp is not compiled into this hypershift; use file://, s3://, gs:// or azblob://"},
		{backupOptions{name: "a", to: "gs://bucket/a.bak", keyFile: key}, ""},
		{backupOptions{name: "a", to: "azblob://container/a.bak?protocol=http&domain=127.0.0.1:10000", keyFile: key}, ""},
		{backupOptions{name: "a", to: "file:///b/", keyFile: key}, "a file name, not a directory"},
		{backupOptions{name: "a", to: "file:///b/a.bak"}, "--key-file is required"},
		{backupOptions{name: "a", to: "file:///b/a.bak", keyFile: short}, "want 32 raw bytes or 64 hex digits"},
		{backupOptions{name: "a", to: "file:///b/a.bak", keyFile: key}, ""},
	} {
		_, err := tc.o.validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestPrintBackup(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Spec.Backup = &hypershiftv1alpha1.BackupSpec{Schedule: "0 3 * * *", URL: "file:///b", Keep: 7}
	hc.Status.Backup = &hypershiftv1alpha1.BackupStatus{
		LastBackup: &hypershiftv1alpha1.BackupRecord{
			URL: "file:///b/x.bak", SizeBytes: 1234, Time: metav1.NewTime(now.Add(-2 * time.Hour)),
			Duration: metav1.Duration{Duration: 1500 * time.Millisecond},
		},
		NextScheduleTime: &metav1.Time{Time: now.Add(15 * time.Hour)},
	}
	var out bytes.Buffer
	printBackup(&out, hc, now)
	for _, want := range []string{
		"Last backup:\tfile:///b/x.bak (1234 bytes, 120m ago, took 1.5s)",
		"Backup schedule:\t0 3 * * * - to file:///b, keep 7, next 2026-11-25T03:00:00Z",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
