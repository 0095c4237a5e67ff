// Package datadir names what a hypershift data dir holds. Every command
// and runtime finds its files through a Layout, so the names below are
// written in one place:
//
//	DATA_DIR/
//	  .hypershift-data-dir    marker: hypershift made or adopted this directory
//	  hypershift.lock         held (flock) by the one `up` or `operator` using it
//	  management.kubeconfig   admin kubeconfig of the management plane
//	  management/             etcd and kube-apiserver of the management plane
//	  clusters/NS-NAME/       one hosted control plane per HostedCluster
//	  nodes/NS-NAME/          node agents of one NodePool
//	  up.pid, up.log          the running `hypershift up` and, with --detach, its output
package datadir

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

// Names inside a data dir.
const (
	// MarkerFile is written when hypershift creates or adopts a data dir;
	// `down --purge` removes only a directory that has it.
	MarkerFile = ".hypershift-data-dir"
	// LockFile is locked (flock) by the one `up` or `operator` process that
	// uses the data dir, for its whole life.
	LockFile = "hypershift.lock"
	// KubeconfigFile is the management plane's admin kubeconfig.
	KubeconfigFile = "management.kubeconfig"
	// ManagementDir holds the management plane's processes; it is also the
	// namespace of the management plane in its process runtime.
	ManagementDir = "management"

	clustersDir = "clusters"
	nodesDir    = "nodes"
	upPIDFile   = "up.pid"
	upLogFile   = "up.log"
)

const markerContent = "This directory is a hypershift data dir: `hypershift down --purge` removes it.\n"

// Layout is a data dir rooted at Root (an absolute path for commands: the
// processes they start may run elsewhere).
type Layout struct{ Root string }

// ManagementKubeconfig is the management plane's admin kubeconfig.
func (l Layout) ManagementKubeconfig() string { return filepath.Join(l.Root, KubeconfigFile) }

// Management is the directory of the management plane's processes.
func (l Layout) Management() string { return filepath.Join(l.Root, ManagementDir) }

// Clusters is the process runtime root of hosted control planes.
func (l Layout) Clusters() string { return filepath.Join(l.Root, clustersDir) }

// Nodes is the process runtime root of node agents: one directory per
// NodePool, NS-NAME.
func (l Layout) Nodes() string { return filepath.Join(l.Root, nodesDir) }

// UpPIDFile names the running `hypershift up`.
func (l Layout) UpPIDFile() string { return filepath.Join(l.Root, upPIDFile) }

// UpLog is the output of `hypershift up --detach`.
func (l Layout) UpLog() string { return filepath.Join(l.Root, upLogFile) }

// Marker is the file that makes Root a data dir.
func (l Layout) Marker() string { return filepath.Join(l.Root, MarkerFile) }

// LockPath is the file `up` and `operator` lock.
func (l Layout) LockPath() string { return filepath.Join(l.Root, LockFile) }

// IsDataDir reports whether Root is a hypershift data dir: it has the
// marker, or it is one made before the marker existed (the management
// kubeconfig beside the management plane's ports.json).
func (l Layout) IsDataDir() bool {
	if _, err := os.Stat(l.Marker()); err == nil {
		return true
	}
	return l.isLegacy()
}

func (l Layout) isLegacy() bool {
	kc, err := os.Lstat(l.ManagementKubeconfig())
	if err != nil || !kc.Mode().IsRegular() {
		return false
	}
	ports, err := os.Lstat(filepath.Join(l.Management(), "ports.json"))
	return err == nil && ports.Mode().IsRegular()
}

// Ensure creates Root as a data dir, or checks that an existing one is a
// data dir (or empty) and marks it. It refuses any other directory, so
// that hypershift never fills, and `down --purge` never removes, a
// directory it did not make.
func (l Layout) Ensure() error {
	dir := l.Root
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir %s: %w", dir, err)
	}
	if _, err := os.Stat(l.Marker()); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read data dir %s: %w", dir, err)
	}
	if len(entries) > 0 && !l.isLegacy() {
		return fmt.Errorf("--data-dir %s is not empty and is not a hypershift data dir (no %s): choose a new or empty directory", dir, MarkerFile)
	}
	if err := atomicfile.Write(l.Marker(), []byte(markerContent), 0o600); err != nil {
		return fmt.Errorf("mark data dir: %w", err)
	}
	return nil
}

// Lock is the held lock of a data dir.
type Lock struct{ f *os.File }

// Claim makes Root a data dir (Ensure) and takes its lock (Lock): what a
// process that runs hosted control planes from it does first.
func (l Layout) Claim() (*Lock, error) {
	if err := l.Ensure(); err != nil {
		return nil, err
	}
	return l.Lock()
}

// Lock takes the data dir's lock for the calling process, or says which
// process holds it. The lock is released when the process exits (or on
// Unlock); the file is not inherited by child processes.
func (l Layout) Lock() (*Lock, error) {
	dir, path := l.Root, l.LockPath()
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
	return &Lock{f: f}, nil
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
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
	}
}
