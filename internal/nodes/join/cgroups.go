package join

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// A node's kubelet gets its own cgroup root (kubelet cgroupRoot), a
// top-level cgroup named for the node and recorded in node.json. The
// kubelet puts its QoS cgroups and every pod under it, so "this node's
// processes" are exactly the processes in that tree: reset kills those and
// removes that tree, and never looks at another kubelet's kubepods.
const cgroupRootPrefix = "/hypershift-node-"

var cgroupRootPattern = regexp.MustCompile(`^/hypershift-node-[0-9a-f]{8,32}$`)

func newCgroupRoot() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return cgroupRootPrefix + hex.EncodeToString(b), nil
}

// validCgroupRoot refuses anything but a name join makes: reset kills every
// process in it, so a node.json edited to name "/" must not reach that.
func validCgroupRoot(root string) error {
	if !cgroupRootPattern.MatchString(root) {
		return fmt.Errorf("cgroupRoot %q in node.json is not one join makes (%sHEX)", root, cgroupRootPrefix)
	}
	return nil
}

// cgroupHierarchies lists the mounted cgroup hierarchies under mnt
// (/sys/fs/cgroup): mnt itself on a unified (v2) host, recognised by its
// cgroup.controllers; on v1, every directory under it (cpu, memory, …,
// name=systemd's, and the hybrid "unified" v2 one), skipping the symlinks
// that alias co-mounted controllers (cpu,cpuacct).
func cgroupHierarchies(mnt string) []string {
	if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
		return []string{mnt}
	}
	var out []string
	entries, _ := os.ReadDir(mnt)
	for _, e := range entries {
		if e.IsDir() { // DirEntry does not follow symlinks
			out = append(out, filepath.Join(mnt, e.Name()))
		}
	}
	return out
}

// cgroupDirs is the node's cgroup root in every hierarchy.
func (n *Node) cgroupDirs() []string {
	if n.CgroupRoot == "" || validCgroupRoot(n.CgroupRoot) != nil {
		return nil
	}
	var out []string
	for _, h := range cgroupHierarchies(cgroupMount) {
		out = append(out, filepath.Join(h, n.CgroupRoot))
	}
	return out
}

// EnsureCgroupRoot creates the node's cgroup root in every hierarchy: the
// kubelet refuses to start when its cgroupRoot is missing, and cgroups do
// not survive a reboot.
func EnsureCgroupRoot(n *Node) error {
	if err := validCgroupRoot(n.CgroupRoot); err != nil {
		return err
	}
	for _, dir := range n.cgroupDirs() {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create the node's cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// cgroupPids lists the processes in the node's cgroups.
func (n *Node) cgroupPids() []int {
	seen := map[int]bool{}
	for _, top := range n.cgroupDirs() {
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil //nolint:nilerr // a cgroup vanishing meanwhile is fine
			}
			data, _ := os.ReadFile(path) //nolint:gosec // cgroupfs, written by the kernel only
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// inCgroup reports whether pid is in cgroup root (or below) in any
// hierarchy, from /proc/PID/cgroup ("ID:CONTROLLERS:PATH" lines).
func inCgroup(pid int, root string) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return false
	}
	return cgroupFileHas(string(data), root)
}

func cgroupFileHas(content, root string) bool {
	for _, line := range strings.Split(content, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == root || strings.HasPrefix(parts[2], root+"/")) {
			return true
		}
	}
	return false
}

// killCgroupProcesses SIGKILLs the processes in the node's cgroups (pod
// containers whose shim or containerd is gone) until none is left. Each is
// signalled through a pidfd after checking, on that pidfd's process, that it
// still is in the node's cgroups, so a reused pid is never hit.
func (n *Node) killCgroupProcesses() error {
	if len(n.cgroupDirs()) == 0 {
		return nil
	}
	var pids []int
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if pids = n.cgroupPids(); len(pids) == 0 {
			return true, nil
		}
		for _, pid := range pids {
			signalIf(pid, syscall.SIGKILL, func() bool { return inCgroup(pid, n.CgroupRoot) })
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("processes %v stay in the node's cgroup %s after SIGKILL", pids, n.CgroupRoot)
	}
	return nil
}

// removeCgroupRoot removes the node's cgroup tree, innermost first (an
// empty cgroup is removed with rmdir).
func (n *Node) removeCgroupRoot() error {
	var errs []error
	for _, top := range n.cgroupDirs() {
		var dirs []string
		_ = filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
