package hostedcontrolplane

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/testenv"
)

// A snapshot is the tenant's data: the operator restores each etcd member
// in a child process (the hypershift binary's `restore etcd-data
// --snapshot`), so one that fails the restore comes back as an error that
// quotes the child, and leaves no member behind, with the operator
// running on.
func TestMemberRestoreRunsInAChildProcess(t *testing.T) {
	exe := testenv.Binary(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "snapshot.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a bbolt file ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "etcd-0")
	args := []string{
		"--name=etcd-0", "--data-dir=" + dataDir, "--initial-advertise-peer-urls=https://127.0.0.1:2380",
		"--initial-cluster=etcd-0=https://127.0.0.1:2380", "--initial-cluster-token=clusters-a",
	}
	err := restoreMember(t.Context(), exe, garbage, args)
	if err == nil || !strings.Contains(err.Error(), "restore etcd data: exit status") || !strings.Contains(err.Error(), "restore etcd snapshot into "+dataDir) {
		t.Fatalf("a snapshot that is not one: %v, want the child's failure quoted", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err == nil {
		t.Error("the failed restore left a member behind")
	}
}
