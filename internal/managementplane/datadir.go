package managementplane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"hypershift.dev/internal/atomicfile"
)

// Files that make a directory a hypershift data dir.
const (
	// MarkerFile is written when hypershift creates or adopts a data dir;
	// `down --purge` removes only a directory that has it.
	MarkerFile = ".hypershift-data-dir"
	// LockFile is locked (flock) by the one `up` or `operator` process that
	// uses the data dir, for its whole life.
	LockFile = "hypershift.lock"
)

const markerContent = "This directory is a hypershift data dir: `hypershift down --purge` removes it.\n"

// IsDataDir reports whether dir is a hypershift data dir: it has the
// marker, or it is one made before the marker existed (the management
// kubeconfig beside the management plane's ports.json).
func IsDataDir(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err == nil {
		return true
	}
	return isLegacyDataDir(dir)
}

func isLegacyDataDir(dir string) bool {
	kc, err := os.Lstat(KubeconfigPath(dir))
	if err != nil || !kc.Mode().IsRegular() {
		return false
	}
	ports, err := os.Lstat(filepath.Join(dir, dirName, "ports.json"))
	return err == nil && ports.Mode().IsRegular()
}

// EnsureDataDir creates dir as a data dir, or checks that an existing
// one is a data dir (or empty) and marks it. It refuses any other
// directory, so that hypershift never fills, and `down --purge` never
// removes, a directory it did not make.
func EnsureDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, MarkerFile)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read data dir %s: %w", dir, err)
	}
	if len(entries) > 0 && !isLegacyDataDir(dir) {
		return fmt.Errorf("--data-dir %s is not empty and is not a hypershift data dir (no %s): choose a new or empty directory", dir, MarkerFile)
	}
	if err := atomicfile.Write(filepath.Join(dir, MarkerFile), []byte(markerContent), 0o600); err != nil {
		return fmt.Errorf("mark data dir: %w", err)
	}
	return nil
}

// DataDirLock is the held lock of a data dir.
type DataDirLock struct{ f *os.File }

// LockDataDir takes the data dir's lock for the calling process, or says
// which process holds it. The lock is released when the process exits
// (or on Unlock); the file is not inherited by child processes.
func LockDataDir(dir string) (*DataDirLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock of data dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUseError(dir, path)
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	// The holder's pid, for the message of the next one that tries.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &DataDirLock{f: f}, nil
}

func inUseError(dir, path string) error {
	holder := "another process"
	if data, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			holder = "pid " + strconv.Itoa(pid)
		}
	}
	return fmt.Errorf("data dir %s is in use by %s (a running `hypershift up` or `hypershift operator`): stop it with `hypershift down --data-dir %s`, or choose another --data-dir", dir, holder, dir)
}

// Unlock releases the lock.
func (l *DataDirLock) Unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
	}
}
