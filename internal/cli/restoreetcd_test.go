package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreEtcdDataLeavesDataAlone: the init container restores nothing
// when its Secret is gone (the restore is done) or the member has data
// already (it never reads the archive then), and refuses arguments that
// do not name the member. The restore itself is exercised end to end by
// TestKubeRuntime.
func TestRestoreEtcdDataLeavesDataAlone(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	args := []string{
		"--name=etcd-0", "--data-dir=" + dataDir,
		"--initial-advertise-peer-urls=https://etcd-0.etcd-discovery.ns.svc:2380",
		"--initial-cluster=etcd-0=https://etcd-0.etcd-discovery.ns.svc:2380", "--initial-cluster-token=ns",
	}
	secretDir := filepath.Join(dir, "restore")
	if err := os.MkdirAll(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}

	msg, err := restoreEtcdData(t.Context(), secretDir, args)
	if err != nil || !strings.Contains(msg, "nothing to restore") {
		t.Errorf("without a restore Secret: %q, %v; want nothing to restore", msg, err)
	}

	// The archive does not exist: reading it would fail.
	writeFile(t, filepath.Join(secretDir, "url"), "file://"+filepath.Join(dir, "missing.bak"))
	writeFile(t, filepath.Join(secretDir, "key"), strings.Repeat("k", 32))
	if err := os.MkdirAll(filepath.Join(dataDir, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dataDir, "member", "snap", "db"), "etcd's own data")
	msg, err = restoreEtcdData(t.Context(), secretDir, args)
	if err != nil || !strings.Contains(msg, "holds data already") {
		t.Errorf("over a member's data: %q, %v; want it left alone", msg, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dataDir, "member", "snap", "db")); string(data) != "etcd's own data" {
		t.Errorf("the member's data changed: %q", data)
	}

	// An empty data dir (a new volume): the archive is read, and its
	// absence is the error.
	if err := os.RemoveAll(filepath.Join(dataDir, "member")); err != nil {
		t.Fatal(err)
	}
	if _, err := restoreEtcdData(t.Context(), secretDir, args); err == nil || !strings.Contains(err.Error(), "missing.bak") {
		t.Errorf("an empty data dir and a missing archive: %v, want an error naming the archive", err)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("a failed restore left %v in the data dir", entries)
	}

	if _, err := restoreEtcdData(t.Context(), secretDir, args[:1]); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("arguments without a data dir: %v, want an error naming the flags", err)
	}
	if _, err := restoreEtcdData(t.Context(), "", args); err == nil || !strings.Contains(err.Error(), "--from-dir") {
		t.Errorf("no --from-dir: %v", err)
	}
}

// TestReadSecretDir: a mounted Secret's keys, without the kubelet's own
// entries.
func TestReadSecretDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "..2026_11_24", "key"), "k")
	if err := os.Symlink("..2026_11_24", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "key"), filepath.Join(dir, "key")); err != nil {
		t.Fatal(err)
	}
	data, err := readSecretDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1 || string(data["key"]) != "k" {
		t.Errorf("readSecretDir = %v, want only key=k", data)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
