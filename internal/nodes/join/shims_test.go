package join

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/runtime/process"
)

// A shim whose bundle containerd already removed is killed by the record
// made while the bundle existed; a record whose start time no longer
// matches (the pid reused by someone else) kills nothing.
func TestKillShimsByRecord(t *testing.T) {
	n := &Node{DataDir: t.TempDir()}
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	orphan, foreign := start(), start()
	orphanStart, err := process.StartTime(orphan.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	foreignStart, err := process.StartTime(foreign.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()

	n.killShims([]shimRecord{
		{pid: orphan.Process.Pid, start: orphanStart},
		{pid: foreign.Process.Pid, start: foreignStart + 1},
	})

	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded shim was not killed")
	}
	var ws syscall.WaitStatus
	if pid, err := syscall.Wait4(foreign.Process.Pid, &ws, syscall.WNOHANG, nil); pid != 0 || err != nil {
		t.Fatalf("a process whose start time differs from the record was killed (%v, %v)", ws, err)
	}
}

// A process working in a task bundle of the node's containerd state is a
// shim of this node; one working anywhere else is not.
func TestShimsAreFoundByTheirBundle(t *testing.T) {
	n := &Node{DataDir: t.TempDir()}
	bundle := filepath.Join(n.containerdState(), "io.containerd.runtime.v2.task", "k8s.io", "0123abcd")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func(dir string) int {
		cmd := exec.Command("sleep", "60")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd.Process.Pid
	}
	shim, other := run(bundle), run(t.TempDir())
	got := n.shims()
	if got[shim] != bundle {
		t.Errorf("shims() = %v: the process in %s is missing", got, bundle)
	}
	if _, ok := got[other]; ok {
		t.Errorf("shims() = %v: holds a process working outside the node's bundles", got)
	}
}

func TestSandboxNetnsPath(t *testing.T) {
	info := `{"pid":0,"runtimeSpec":{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1234"},{"type":"mount"}]}}}`
	if got := sandboxNetnsPath(info); got != "/var/run/netns/cni-1234" {
		t.Errorf("sandboxNetnsPath = %q, want /var/run/netns/cni-1234", got)
	}
	for _, bad := range []string{"", "{", `{"runtimeSpec":{"linux":{"namespaces":[{"type":"network"}]}}}`} {
		if got := sandboxNetnsPath(bad); got != "" {
			t.Errorf("sandboxNetnsPath(%q) = %q, want none", bad, got)
		}
	}
}

// A node dir reached through a symbolic link: the shim's working directory
// reads as the resolved path, and is still the node's.
func TestShimsAreFoundThroughALinkedNodeDir(t *testing.T) {
	real, link := t.TempDir(), filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	n := &Node{DataDir: link}
	bundle := filepath.Join(n.containerdState(), "io.containerd.runtime.v2.task", "k8s.io", "0123abcd")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.Dir = bundle
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	resolved, err := filepath.EvalSymlinks(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if got := n.shims(); got[cmd.Process.Pid] != resolved {
		t.Errorf("shims() = %v: the process in %s is missing", got, resolved)
	}
}
