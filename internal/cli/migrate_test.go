package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// TestMigrateRefusesBadInput: every flag is checked before either
// management plane is contacted (there is none here), naming the flag.
func TestMigrateRefusesBadInput(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("ab", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("abcd"), 0o600); err != nil {
		t.Fatal(err)
	}
	via := "file://" + filepath.Join(dir, "a.bak")
	base := []string{"--data-dir", dir, "migrate", "cluster"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to-kubeconfig", "k", "--via", via, "--key-file", key}, "--name is required"},
		{[]string{"--name", "a", "--via", via, "--key-file", key}, "--to-kubeconfig is required"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--key-file", key}, "--via is required"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", "ftp://bucket/a.bak", "--key-file", key}, "--via: "},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", "gs://bucket/a.bak", "--key-file", key}, "no management plane found"},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", short}, short},
		{[]string{"--name", "a", "--to-kubeconfig", "k", "--via", via, "--key-file", key}, "no management plane found"},
	} {
		_, err := run(t, append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("migrate %v: error %v, want it to contain %q", tc.args, err, tc.want)
		}
	}
}

func TestBackupUnderWay(t *testing.T) {
	withRequest := func(id string, st *hypershiftv1alpha1.BackupStatus) *hypershiftv1alpha1.HostedCluster {
		hc := &hypershiftv1alpha1.HostedCluster{Status: hypershiftv1alpha1.HostedClusterStatus{Backup: st}}
		if id != "" {
			hc.Annotations = map[string]string{hypershiftv1alpha1.BackupRequestAnnotation: `{"id":"` + id + `","url":"file:///b","secret":"s"}`}
		}
		return hc
	}
	done := &hypershiftv1alpha1.BackupStatus{LastBackup: &hypershiftv1alpha1.BackupRecord{RequestID: "r1"}}
	failed := &hypershiftv1alpha1.BackupStatus{FailedRequestID: "r1", LastBackup: &hypershiftv1alpha1.BackupRecord{RequestID: "r0"}}
	for _, tc := range []struct {
		name string
		hc   *hypershiftv1alpha1.HostedCluster
		want bool
	}{
		{"no request", withRequest("", nil), false},
		{"no status yet", withRequest("r1", nil), true},
		{"answered", withRequest("r1", done), false},
		{"failed", withRequest("r1", failed), false},
		{"newer request than the last answer", withRequest("r2", done), true},
	} {
		if got := backupUnderWay(tc.hc); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
