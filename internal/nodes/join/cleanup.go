package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"hypershift.dev/internal/runtime/process"
)

// removePods stops and removes every pod sandbox through the CRI, as the
// kubelet would: stopping a sandbox stops its containers and releases its
// network (CNI DEL: veth, address, NAT rules, network namespace).
func removePods(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connect to containerd: %w", err)
	}
	defer conn.Close()
	cri := runtimeapi.NewRuntimeServiceClient(conn)
	list, err := cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	var errs []error
	for _, sb := range list.Items {
		if err := removePod(ctx, cri, sb.Id); err != nil {
			errs = append(errs, fmt.Errorf("pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// A pod's removal is tried removePodAttempts times, removePodInterval
// apart (10 s in all).
var (
	removePodAttempts = 20
	removePodInterval = 500 * time.Millisecond
)

// removePod stops and removes one sandbox. containerd outlives the kubelet,
// so a container the kubelet asked to start just before it stopped can
// still be starting, and containerd refuses to remove it until the start
// is over: the stop and removal are tried again for a while.
func removePod(ctx context.Context, cri runtimeapi.RuntimeServiceClient, id string) error {
	var err error
	for attempt := range removePodAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			case <-time.After(removePodInterval):
			}
		}
		_, err = cri.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		if err != nil && dropStaleNetns(ctx, cri, id) {
			_, err = cri.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		}
		if status.Code(err) == codes.NotFound {
			return nil // removed since it was listed
		}
		if err != nil {
			err = fmt.Errorf("stop: %w", err)
			continue
		}
		_, err = cri.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		if err != nil && status.Code(err) != codes.NotFound {
			err = fmt.Errorf("remove: %w", err)
			continue
		}
		return nil
	}
	return err
}

// shims lists the node's containerd shims (pid to task bundle): the
// processes whose working directory is a task bundle under the node's
// containerd state (a shim runs in its bundle; containerd 1.6 writes no
// shim.pid for a pod's shim). Containers themselves work in their own
// root, so they do not match.
func (n *Node) shims() map[int]string {
	// A process's working directory reads as the resolved path: resolve a
	// node dir reached through a symbolic link the same way.
	state := n.containerdState()
	if resolved, err := filepath.EvalSymlinks(state); err == nil {
		state = resolved
	}
	dirs, _ := filepath.Glob(filepath.Join(state, "io.containerd.runtime.v2.task", "*", "*"))
	bundles := map[string]bool{}
	for _, d := range dirs {
		bundles[d] = true
	}
	out := map[int]string{}
	if len(bundles) == 0 {
		return out
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && bundles[cwd] {
			out[pid] = cwd
		}
	}
	return out
}

func isShim(pid int, bundle string) bool {
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && cwd == bundle
}

// dropStaleNetns handles a sandbox whose network namespace is already gone
// but whose file stayed: a stop interrupted between unmounting the
// namespace and removing its file (the kubelet stopped mid-way, or the
// pod's shim died). CNI DEL then fails on "unknown FS magic" forever. The
// file is the one this node's containerd names in the sandbox's own spec;
// it is removed only when it is a plain file under a netns directory, not
// a namespace, so DEL sees a namespace that no longer exists, which CNI
// plugins accept. Reports whether it removed one.
func dropStaleNetns(ctx context.Context, cri runtimeapi.RuntimeServiceClient, id string) bool {
	status, err := cri.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return false
	}
	path := sandboxNetnsPath(status.GetInfo()["info"])
	if path == "" || (filepath.Dir(path) != "/var/run/netns" && filepath.Dir(path) != "/run/netns") {
		return false
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil || fs.Type == unix.NSFS_MAGIC {
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		return false
	}
	return os.Remove(path) == nil
}

// sandboxNetnsPath reads the network namespace path from containerd's
// verbose sandbox info (its runtime spec's namespaces).
func sandboxNetnsPath(info string) string {
	var v struct {
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct {
					Type string `json:"type"`
					Path string `json:"path"`
				} `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if json.Unmarshal([]byte(info), &v) != nil {
		return ""
	}
	for _, ns := range v.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" {
			return ns.Path
		}
	}
	return ""
}

// shimRecord is a shim seen working in its bundle, by pid and start time:
// once containerd removed the bundle, that pair is what still names it.
type shimRecord struct {
	pid   int
	start uint64
}

// recordShims notes the node's shims (found by their bundles) while the
// bundles exist: removing a pod removes its bundle, and a shim that
// outlives it (containerd stopped before telling it to exit) has nothing
// left that ties it to this node but this record.
func (n *Node) recordShims() []shimRecord {
	var out []shimRecord
	for pid := range n.shims() {
		if start, err := process.StartTime(pid); err == nil {
			out = append(out, shimRecord{pid: pid, start: start})
		}
	}
	return out
}

// killShims SIGKILLs the node's shims left after containerd removed what
// it could — those still in their bundles, and those recorded before the
// pods were removed that are still the same process (pid and start time) —
// and waits briefly for them to go.
func (n *Node) killShims(recorded []shimRecord) {
	for pid, bundle := range n.shims() {
		signalIf(pid, syscall.SIGKILL, func() bool { return isShim(pid, bundle) })
	}
	same := func(r shimRecord) bool {
		start, err := process.StartTime(r.pid)
		return err == nil && start == r.start
	}
	for _, r := range recorded {
		signalIf(r.pid, syscall.SIGKILL, func() bool { return same(r) })
	}
	_ = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) {
			return len(n.shims()) == 0 && !slices.ContainsFunc(recorded, same), nil
		})
}

// signalIf sends sig to pid if check, run after pinning the process with a
// pidfd, still holds: the pid cannot be reused between check and signal.
func signalIf(pid int, sig syscall.Signal, check func() bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	if check() {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}

func unmount(path string) error {
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}
