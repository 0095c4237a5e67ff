package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
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

func TestRestoredPoolName(t *testing.T) {
	for _, tc := range []struct{ pool, old, new, want string }{
		{"a", "a", "a", "a"},
		{"a", "a", "b", "b"},
		{"a-workers", "a", "b", "b-workers"},
		{"gpu", "a", "b", "b-gpu"},
		{"ab", "a", "b", "b-ab"},
	} {
		if got := restoredPoolName(tc.pool, tc.old, tc.new); got != tc.want {
			t.Errorf("restoredPoolName(%q, %q, %q) = %q, want %q", tc.pool, tc.old, tc.new, got, tc.want)
		}
	}
}

// TestRequestSecretData puts only the URL scheme's credentials from the
// environment into the request Secret.
func TestRequestSecretData(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "acct")
	t.Setenv("AZURE_STORAGE_KEY", "a2V5")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS_JSON", `{"type":"service_account"}`)
	key := []byte("0123456789abcdef0123456789abcdef")
	for rawURL, want := range map[string]string{
		"file:///b/a.bak":                "key",
		"s3://b/a.bak?region=us-east-1":  "AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,key",
		"gs://b/a.bak":                   "GOOGLE_APPLICATION_CREDENTIALS_JSON,key",
		"azblob://c/a.bak?protocol=http": "AZURE_STORAGE_ACCOUNT,AZURE_STORAGE_KEY,key",
	} {
		data, err := requestSecretData(rawURL, key)
		if err != nil {
			t.Fatalf("%s: %v", rawURL, err)
		}
		var got []string
		for k := range data {
			got = append(got, k)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != want {
			t.Errorf("%s: Secret keys %v, want %s", rawURL, got, want)
		}
	}
	t.Setenv("AZURE_STORAGE_KEY", "")
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", "")
	if _, err := requestSecretData("azblob://c/a.bak", key); err == nil || !strings.Contains(err.Error(), "AZURE_STORAGE_ACCOUNT needs AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN") {
		t.Errorf("an account without key: %v", err)
	}
}
