package datadir

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestEnsure(t *testing.T) {
	t.Run("new directory is created and marked", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "d")
		if err := (Layout{Root: dir}).Ensure(); err != nil {
			t.Fatal(err)
		}
		if !(Layout{Root: dir}).IsDataDir() {
			t.Errorf("%s is not a data dir after Ensure", dir)
		}
	})
	t.Run("someone else's directory is refused and left alone", func(t *testing.T) {
		dir := t.TempDir()
		writeTestFile(t, filepath.Join(dir, "notes.txt"))
		err := (Layout{Root: dir}).Ensure()
		if err == nil || !strings.Contains(err.Error(), "is not a hypershift data dir") {
			t.Fatalf("Ensure(%s) = %v, want a refusal", dir, err)
		}
		if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err == nil {
			t.Error("the marker was written into a foreign directory")
		}
		if (Layout{Root: dir}).IsDataDir() {
			t.Error("a foreign directory counts as a data dir")
		}
	})
	t.Run("a data dir made before the marker is recognised and marked", func(t *testing.T) {
		dir := t.TempDir()
		writeTestFile(t, (Layout{Root: dir}).ManagementKubeconfig())
		writeTestFile(t, filepath.Join(dir, "management", "ports.json"))
		if !(Layout{Root: dir}).IsDataDir() {
			t.Error("a data dir without marker but with the management plane layout is not recognised")
		}
		if err := (Layout{Root: dir}).Ensure(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err != nil {
			t.Errorf("the marker was not written: %v", err)
		}
	})
}

func TestLockNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	lock, err := (Layout{Root: dir}).Lock()
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file: a second open conflicts even in
	// the same process.
	_, err = (Layout{Root: dir}).Lock()
	want := "in use by pid " + strconv.Itoa(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second Lock = %v, want an error containing %q", err, want)
	}
	lock.Unlock()
	again, err := (Layout{Root: dir}).Lock()
	if err != nil {
		t.Fatalf("lock after Unlock: %v", err)
	}
	again.Unlock()
}

func writeTestFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLayoutNames pins the names users, scripts and earlier data dirs rely
// on: changing one strands the data of every existing data dir.
func TestLayoutNames(t *testing.T) {
	l := Layout{Root: "/d"}
	for _, tc := range []struct{ got, want string }{
		{l.ManagementKubeconfig(), "/d/management.kubeconfig"},
		{l.Management(), "/d/management"},
		{l.Clusters(), "/d/clusters"},
		{l.Nodes(), "/d/nodes"},
		{l.UpPIDFile(), "/d/up.pid"},
		{l.UpLog(), "/d/up.log"},
		{l.Marker(), "/d/.hypershift-data-dir"},
		{l.LockPath(), "/d/hypershift.lock"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}
