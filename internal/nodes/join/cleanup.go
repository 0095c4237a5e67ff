package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
		if _, err := cri.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
		}
		if _, err := cri.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove pod %s/%s: %w", sb.Metadata.GetNamespace(), sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// cgroupPids lists the processes in the kubelet's cgroups (containers whose
// shim is gone).
func cgroupPids() []int {
	seen := map[int]bool{}
	for _, top := range kubepodsCgroups() {
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
	return out
}

// killAll SIGKILLs pids and waits briefly for them to go.
func killAll(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func unmount(path string) error {
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

// removeCgroups removes the kubepods cgroups that were not there before,
// innermost first (a cgroup directory is removed with rmdir once empty).
func removeCgroups(before *HostState) error {
	var had []string
	if before != nil {
		had = before.Cgroups
	}
	var errs []error
	for _, top := range added(had, kubepodsCgroups()) {
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
