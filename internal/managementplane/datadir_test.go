package managementplane

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestEnsureDataDir(t *testing.T) {
	t.Run("new directory is created and marked", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "d")
		if err := EnsureDataDir(dir); err != nil {
			t.Fatal(err)
		}
		if !IsDataDir(dir) {
			t.Errorf("%s is not a data dir after EnsureDataDir", dir)
		}
	})
	t.Run("someone else's directory is refused and left alone", func(t *testing.T) {
		dir := t.TempDir()
		writeTestFile(t, filepath.Join(dir, "notes.txt"))
		err := EnsureDataDir(dir)
		if err == nil || !strings.Contains(err.Error(), "is not a hypershift data dir") {
			t.Fatalf("EnsureDataDir(%s) = %v, want a refusal", dir, err)
		}
		if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err == nil {
			t.Error("the marker was written into a foreign directory")
		}
		if IsDataDir(dir) {
			t.Error("a foreign directory counts as a data dir")
		}
	})
	t.Run("a data dir made before the marker is recognised and marked", func(t *testing.T) {
		dir := t.TempDir()
		writeTestFile(t, KubeconfigPath(dir))
		writeTestFile(t, filepath.Join(dir, dirName, "ports.json"))
		if !IsDataDir(dir) {
			t.Error("a data dir without marker but with the management plane layout is not recognised")
		}
		if err := EnsureDataDir(dir); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err != nil {
			t.Errorf("the marker was not written: %v", err)
		}
	})
}

func TestLockDataDirNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	lock, err := LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file: a second open conflicts even in
	// the same process.
	_, err = LockDataDir(dir)
	want := "in use by pid " + strconv.Itoa(os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second LockDataDir = %v, want an error containing %q", err, want)
	}
	lock.Unlock()
	again, err := LockDataDir(dir)
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
