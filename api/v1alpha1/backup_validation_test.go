package v1alpha1_test

import (
	"strings"
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
)

// TestBackupAdmission checks every rule of spec.backup against a real API
// server: the error names the field, and keep defaults to 7.
func TestBackupAdmission(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	createNamespace(t, c, "clusters")
	valid := func() *hypershiftv1alpha1.BackupSpec {
		return &hypershiftv1alpha1.BackupSpec{
			Schedule: "0 3 * * *", URL: "s3://bucket/nightly?region=eu-west-1",
			EncryptionKeySecret: hypershiftv1alpha1.SecretReference{Name: "backup-key"},
		}
	}
	for i, tt := range []struct {
		name    string
		mutate  func(b *hypershiftv1alpha1.BackupSpec)
		wantErr string
	}{
		{"valid", func(*hypershiftv1alpha1.BackupSpec) {}, ""},
		{"file directory, @daily, a zone", func(b *hypershiftv1alpha1.BackupSpec) {
			b.URL, b.Schedule, b.TimeZone = "file:///var/backups", "@daily", "Europe/Berlin"
		}, ""},
		{"four cron fields", func(b *hypershiftv1alpha1.BackupSpec) { b.Schedule = "0 3 * *" }, "spec.backup.schedule must be a 5-field cron expression"},
		{"bad zone", func(b *hypershiftv1alpha1.BackupSpec) { b.TimeZone = "Europe Berlin" }, "spec.backup.timeZone"},
		{"gs bucket", func(b *hypershiftv1alpha1.BackupSpec) { b.URL = "gs://bucket/x?endpoint=http://127.0.0.1:4443" }, ""},
		{"azblob container", func(b *hypershiftv1alpha1.BackupSpec) {
			b.URL = "azblob://backups?protocol=http&domain=127.0.0.1:10000"
		}, ""},
		{"ftp not compiled in", func(b *hypershiftv1alpha1.BackupSpec) { b.URL = "ftp://bucket/x" }, "spec.backup.url must be file:///directory or s3://, gs:// or azblob://"},
		{"relative file", func(b *hypershiftv1alpha1.BackupSpec) { b.URL = "file://backups" }, "spec.backup.url"},
		{"keep below 1", func(b *hypershiftv1alpha1.BackupSpec) { b.Keep = -1 }, "spec.backup.keep"},
		{"no key Secret", func(b *hypershiftv1alpha1.BackupSpec) { b.EncryptionKeySecret.Name = "" }, "spec.backup.encryptionKeySecret.name"},
		{"empty credentials Secret", func(b *hypershiftv1alpha1.BackupSpec) {
			b.CredentialsSecret = &hypershiftv1alpha1.SecretReference{}
		}, "spec.backup.credentialsSecret.name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hc := validCluster("clusters", "b"+strings.Repeat("x", i))
			hc.Spec.Backup = valid()
			tt.mutate(hc.Spec.Backup)
			err := c.Create(t.Context(), hc)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			case tt.name == "valid" && hc.Spec.Backup.Keep != 7:
				t.Errorf("keep %d, want the default 7", hc.Spec.Backup.Keep)
			}
		})
	}
}
