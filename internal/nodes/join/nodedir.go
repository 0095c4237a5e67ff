package join

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// markerName is the file join writes first into a node directory it
// creates (or finds empty). Only a directory holding it is ever reused by a
// join or removed by a reset: a mistyped --node-dir naming a directory with
// someone else's files is refused instead of filled or deleted.
const markerName = ".hypershift-node"

const markerContent = "created by `hypershift join`; `hypershift join --reset` removes this directory\n"

// CanonicalDir makes a node directory absolute and resolves symlinks in it
// (in its longest existing prefix when it does not exist yet), so that
// what reset compares with mount points and removes is the directory the
// kubelet really used.
func CanonicalDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("--node-dir is empty: name a directory for the node, e.g. " + DefaultDataDir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--node-dir %s: %w", dir, err)
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		resolved, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{resolved}, rest...)...), nil
		}
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			return "", fmt.Errorf("--node-dir %s: resolve %s: %w", dir, p, err)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}

// hasMarker reports whether dir was created by a join.
func hasMarker(dir string) bool {
	info, err := os.Lstat(filepath.Join(dir, markerName))
	return err == nil && info.Mode().IsRegular()
}

// checkNodeDir refuses a directory join did not create that holds files.
func checkNodeDir(dir string) error {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--node-dir %s: %w", dir, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("--node-dir %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("--node-dir %s is not a directory: choose a new or empty directory", dir)
	}
	if _, err := f.Readdirnames(1); errors.Is(err, io.EOF) || hasMarker(dir) {
		return nil
	}
	return fmt.Errorf("--node-dir %s is not empty and was not made by `hypershift join` (no %s in it): choose a new or empty directory, e.g. %s",
		dir, markerName, DefaultDataDir)
}

// createNodeDir creates dir (0700) and marks it as the node's.
func createNodeDir(dir string) error {
	if err := checkNodeDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if hasMarker(dir) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, markerName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("mark %s as a node directory: %w", dir, err)
	}
	_, err = f.WriteString(markerContent)
	return errors.Join(err, f.Close())
}

// Preflight checks, before anything is created, that a join may use this
// host and dir: dir is new, empty or an earlier join's, no other kubelet
// runs here (two kubelets fight over ports, the CNI bridge and cgroups) and
// no other node's pod bridge is left here. It returns dir made canonical, which the join then uses
// everywhere.
func Preflight(dir string, kubeletPort int) (string, error) {
	canonical, err := CanonicalDir(dir)
	if err != nil {
		return "", err
	}
	if err := checkNodeDir(canonical); err != nil {
		return "", err
	}
	if err := checkNoKubelet("/proc", kubeletPort); err != nil {
		return "", err
	}
	if err := checkNoPodBridge("/sys/class/net"); err != nil {
		return "", err
	}
	return canonical, nil
}

// checkNoPodBridge refuses a host that has a node's pod bridge already
// (read from sysClassNet, /sys/class/net): another node runs here, or one
// stopped without its reset (killed, or its directory removed by hand). A
// join beside it would record the bridge, the CNI chains of its pods and
// kube-proxy's rules as the host's own, and its reset would keep them; the
// other node's pods' addresses would clash with this one's.
func checkNoPodBridge(sysClassNet string) error {
	if _, err := os.Lstat(filepath.Join(sysClassNet, Bridge)); err != nil {
		return nil
	}
	return fmt.Errorf("this host has the pod bridge %s of another node: a node runs here, or one was stopped without `hypershift join --reset --node-dir DIR`; "+
		"reset that node with its directory (if the directory is gone, remove what it left by hand: docs/real-nodes.md, \"A node left without its reset\")", Bridge)
}
