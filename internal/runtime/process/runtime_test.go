package process_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// etcdSpec is a plain-HTTP single-member etcd: a real component that starts
// in well under a second.
func etcdSpec(t *testing.T, dir string, extra ...string) runtime.Spec {
	t.Helper()
	client, peer, metrics := testenv.FreePort(t), testenv.FreePort(t), testenv.FreePort(t)
	args := []string{
		"--name=etcd-0",
		"--data-dir=" + filepath.Join(dir, "etcd-0", "data"),
		fmt.Sprintf("--listen-client-urls=http://127.0.0.1:%d", client),
		fmt.Sprintf("--advertise-client-urls=http://127.0.0.1:%d", client),
		fmt.Sprintf("--listen-peer-urls=http://127.0.0.1:%d", peer),
		fmt.Sprintf("--initial-advertise-peer-urls=http://127.0.0.1:%d", peer),
		fmt.Sprintf("--initial-cluster=etcd-0=http://127.0.0.1:%d", peer),
		fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", metrics),
		"--log-level=warn",
	}
	return runtime.Spec{
		Name:      "etcd-0",
		Component: components.Etcd,
		Args:      append(args, extra...),
		Files:     []runtime.File{{Path: "secret.key", Content: []byte("k"), Secret: true}},
		Readiness: runtime.Probe{Scheme: "http", Port: metrics, Path: "/health"},
	}
}

func newRuntime(t *testing.T, root string) *process.Runtime {
	t.Helper()
	return newRuntimeProbing(t, root, 0)
}

// newRuntimeProbing is newRuntime with a ready instance probed every
// period (0: the default).
func newRuntimeProbing(t *testing.T, root string, period time.Duration) *process.Runtime {
	t.Helper()
	rt, err := process.New(process.Options{Root: root, Binary: testenv.Binary(t), Log: testenv.Logger(), ProbePeriod: period})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func status(rt *process.Runtime, ref runtime.ControlPlaneRef) runtime.InstanceStatus {
	for _, s := range rt.Status(ref) {
		if s.Name == "etcd-0" {
			return s
		}
	}
	return runtime.InstanceStatus{}
}

func running(rt *process.Runtime, ref runtime.ControlPlaneRef) func() bool {
	return func() bool { return status(rt, ref).Phase == runtime.Running }
}

// startEtcd runs a real etcd as ref's one component, under a runtime of a
// new root, and waits until it runs; ref's processes are stopped when the
// test ends, also when it fails before doing so itself.
func startEtcd(t *testing.T, ref runtime.ControlPlaneRef) (root string, rt *process.Runtime, spec runtime.Spec) {
	t.Helper()
	root = testenv.ShortTempDir(t)
	spec = etcdSpec(t, filepath.Join(root, ref.Namespace))
	rt = newRuntime(t, root)
	t.Cleanup(func() { rt.Stop(context.Background(), ref) })
	if err := rt.Apply(context.Background(), ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "etcd running", running(rt, ref))
	return root, rt, spec
}

// processAlive: pid runs. A zombie has exited (its parent, the runtime's
// supervisor, may not have reaped it yet on a busy machine), as the
// runtime itself judges.
func processAlive(pid int) bool {
	fields, err := process.StatFields(pid)
	return err == nil && len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

func TestSupervisionRestartAdoptStop(t *testing.T) {
	ref := runtime.ControlPlaneRef{Namespace: "ns-a", Name: "a"}
	ctx := context.Background()
	root, rt, spec := startEtcd(t, ref)
	first := status(rt, ref)

	info, err := os.Stat(filepath.Join(root, ref.Namespace, "etcd-0", "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %v, want 0600", info.Mode().Perm())
	}
	if sid, _ := unix.Getsid(int(first.PID)); sid != int(first.PID) {
		t.Errorf("component is not the leader of its own session (sid %d, pid %d)", sid, first.PID)
	}

	// A killed component is restarted, and the restart is recorded.
	if err := syscall.Kill(int(first.PID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart", func() bool {
		s := status(rt, ref)
		return s.Restarts == 1 && s.PID != first.PID && s.Phase == runtime.Running
	})
	if got := status(rt, ref).LastExitReason; got != "Signaled: killed" {
		t.Errorf("last exit reason %q, want %q", got, "Signaled: killed")
	}
	second := status(rt, ref)

	// Releasing the supervisor leaves the process serving; a new runtime
	// adopts the same pid instead of starting another.
	rt.Release()
	if !processAlive(int(second.PID)) {
		t.Fatal("release stopped the process")
	}
	rt2 := newRuntime(t, root)
	if err := rt2.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "adopted etcd running", running(rt2, ref))
	if got := status(rt2, ref).PID; got != second.PID {
		t.Errorf("adopted pid %d, want the running %d", got, second.PID)
	}

	// A changed spec replaces the process.
	changed := spec
	changed.Args = append(append([]string(nil), spec.Args...), "--snapshot-count=5000")
	if err := rt2.Apply(ctx, ref, []runtime.Spec{changed}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart with the new spec", func() bool {
		s := status(rt2, ref)
		return s.PID != second.PID && s.Phase == runtime.Running
	})
	third := status(rt2, ref)

	// Delete stops the process and removes its data.
	if err := rt2.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if processAlive(int(third.PID)) {
		t.Error("process still running after Delete")
	}
	if _, err := os.Stat(filepath.Join(root, ref.Namespace)); !os.IsNotExist(err) {
		t.Errorf("data dir still present after Delete: %v", err)
	}
}

func TestCrashLoopBacksOffAndReports(t *testing.T) {
	root := testenv.ShortTempDir(t)
	ref := runtime.ControlPlaneRef{Namespace: "ns-b", Name: "b"}
	spec := etcdSpec(t, filepath.Join(root, ref.Namespace), "--no-such-flag")
	rt := newRuntime(t, root)
	t.Cleanup(func() { rt.Stop(context.Background(), ref) })
	if err := rt.Apply(context.Background(), ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two restarts", func() bool { return status(rt, ref).Restarts >= 2 })
	s := status(rt, ref)
	if s.LastExitReason == "" || s.LastExitReason == "Completed" {
		t.Errorf("last exit reason %q, want an error", s.LastExitReason)
	}
	if s.Message == "" {
		t.Error("no log lines in the status message of a crash-looping component")
	}
}

func TestPortsAreStableAndDistinct(t *testing.T) {
	root := testenv.ShortTempDir(t)
	rt := newRuntime(t, root)
	ctx := context.Background()
	names := components.PortNames(components.HighlyAvailable)
	a1, err := rt.Ports(ctx, runtime.ControlPlaneRef{Namespace: "a"}, runtime.Named(names...))
	if err != nil {
		t.Fatal(err)
	}
	// A new runtime knows a's ports are taken and gives them back to a.
	rt2 := newRuntime(t, root)
	b, err := rt2.Ports(ctx, runtime.ControlPlaneRef{Namespace: "b"}, runtime.Named(names...))
	if err != nil {
		t.Fatal(err)
	}
	a2, err := rt2.Ports(ctx, runtime.ControlPlaneRef{Namespace: "a"}, runtime.Named(names...))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(a1, a2) {
		t.Errorf("ports changed across runtimes: %v then %v", a1, a2)
	}
	seen := map[int]bool{}
	for _, p := range []map[string]int{a1, b} {
		if len(p) != len(names) {
			t.Errorf("%d ports for %d names", len(p), len(names))
		}
		for _, port := range p {
			if seen[port] {
				t.Errorf("port %d handed out twice", port)
			}
			// The Konnectivity server refuses ports of the dynamic range.
			if port > 49151 {
				t.Errorf("port %d is above 49151", port)
			}
			seen[port] = true
		}
	}
}

// TestPortsOfNewNamesAreAdded: a control plane made before a component
// existed (its ports.json lacks the Konnectivity server's names) keeps
// every port it has and gets new ones for the new names.
func TestPortsOfNewNamesAreAdded(t *testing.T) {
	rt := newRuntime(t, testenv.ShortTempDir(t))
	ctx := context.Background()
	ref := runtime.ControlPlaneRef{Namespace: "old"}
	all := components.PortNames(components.SingleReplica)
	older := slices.DeleteFunc(slices.Clone(all), func(n string) bool { return strings.HasPrefix(n, components.KonnectivityPort) })
	if len(older) == len(all) {
		t.Fatalf("no Konnectivity port among %v", all)
	}
	before, err := rt.Ports(ctx, ref, runtime.Named(older...))
	if err != nil {
		t.Fatal(err)
	}
	after, err := rt.Ports(ctx, ref, runtime.Named(all...))
	if err != nil {
		t.Fatal(err)
	}
	for name, port := range before {
		if after[name] != port {
			t.Errorf("port %s changed from %d to %d", name, port, after[name])
		}
	}
	if after[components.KonnectivityPort] == 0 || len(after) != len(all) {
		t.Errorf("ports after the upgrade %v, want one for each of %v", after, all)
	}
}

func TestReloadableFilesAreReplacedWithoutRestart(t *testing.T) {
	root := testenv.ShortTempDir(t)
	ref := runtime.ControlPlaneRef{Namespace: "ns-r", Name: "r"}
	ctx := context.Background()
	spec := etcdSpec(t, filepath.Join(root, ref.Namespace))
	spec.Files = append(spec.Files, runtime.File{Path: "server.crt", Content: []byte("one"), Reloadable: true})
	rt := newRuntime(t, root)
	if err := rt.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "etcd running", running(rt, ref))
	first := status(rt, ref)
	path := filepath.Join(root, ref.Namespace, "etcd-0", "server.crt")
	read := func() string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	if got := read(); got != "one" {
		t.Fatalf("reloadable file holds %q at start, want %q", got, "one")
	}

	// New content of a reloadable file: replaced in place, same process.
	renewed := spec
	renewed.Files = slices.Clone(spec.Files)
	renewed.Files[len(renewed.Files)-1].Content = []byte("two")
	if renewed.Hash() != spec.Hash() {
		t.Fatal("a reloadable file's content changed the spec hash")
	}
	if err := rt.Apply(ctx, ref, []runtime.Spec{renewed}); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "two" {
		t.Fatalf("reloadable file holds %q after the change, want %q", got, "two")
	}
	time.Sleep(time.Second) // a restart would have begun
	if s := status(rt, ref); s.PID != first.PID || s.Phase != runtime.Running {
		t.Fatalf("process replaced (pid %d, was %d; %s): a reloadable file must not restart it", s.PID, first.PID, s.Phase)
	}

	// A file that is not reloadable still restarts the process.
	restarted := renewed
	restarted.Files = slices.Clone(renewed.Files)
	restarted.Files[0].Content = []byte("other")
	if err := rt.Apply(ctx, ref, []runtime.Spec{restarted}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "restart for a changed file", func() bool {
		s := status(rt, ref)
		return s.PID != first.PID && s.Phase == runtime.Running
	})
	if got := read(); got != "two" {
		t.Fatalf("reloadable file holds %q after the restart, want %q", got, "two")
	}

	// An operator that starts while the process runs adopts it and
	// brings the reloadable file up to date.
	pid := status(rt, ref).PID
	rt.Release()
	third := restarted
	third.Files = slices.Clone(restarted.Files)
	third.Files[len(third.Files)-1].Content = []byte("three")
	rt2 := newRuntime(t, root)
	if err := rt2.Apply(ctx, ref, []runtime.Spec{third}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "adopted", running(rt2, ref))
	if got := status(rt2, ref).PID; got != pid {
		t.Fatalf("adoption replaced the process (%d, was %d)", got, pid)
	}
	waitFor(t, "reloadable file written on adoption", func() bool { return read() == "three" })
	if err := rt2.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
}
