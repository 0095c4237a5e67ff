package process_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/runtime"
)

// TestAdoptionReportsTheTruth: a process an earlier operator left running is
// Running, with its pid and original start time, in the very first status
// of the runtime that adopts it — before any probe — so a restarted
// operator never reports its control plane as stopped.
func TestAdoptionReportsTheTruth(t *testing.T) {
	ref := runtime.ControlPlaneRef{Namespace: "ns-a", Name: "a"}
	root, rt, spec := startEtcd(t, ref)
	before := status(rt, ref)
	if before.StartedAt.IsZero() {
		t.Fatal("a started process has no StartedAt")
	}
	rt.Release()

	adopt := func(t *testing.T) runtime.InstanceStatus {
		t.Helper()
		rt2 := newRuntime(t, root)
		if err := rt2.Apply(t.Context(), ref, []runtime.Spec{spec}); err != nil {
			t.Fatal(err)
		}
		first := status(rt2, ref)
		rt2.Release()
		return first
	}

	t.Run("pid record with start time", func(t *testing.T) {
		first := adopt(t)
		if first.Phase != runtime.Running || first.PID != before.PID {
			t.Errorf("first status after adoption: phase %s pid %d, want Running pid %d", first.Phase, first.PID, before.PID)
		}
		if !first.StartedAt.Equal(before.StartedAt) {
			t.Errorf("StartedAt after adoption %v, want the original %v", first.StartedAt, before.StartedAt)
		}
	})

	t.Run("pid record written before start times were kept", func(t *testing.T) {
		editPidRecord(t, filepath.Join(root, ref.Namespace, "etcd-0", "pid.json"), func(rec map[string]any) { delete(rec, "startedAt") })
		first := adopt(t)
		if first.Phase != runtime.Running {
			t.Errorf("first status after adoption: phase %s, want Running", first.Phase)
		}
		// From the kernel's start time: boot time has whole seconds.
		if first.StartedAt.Sub(before.StartedAt).Abs() > 2*time.Second {
			t.Errorf("StartedAt from /proc %v, want about %v", first.StartedAt, before.StartedAt)
		}
	})
}

// TestRunningBeforeAdoption: a runtime that has not applied a control plane
// yet still says it runs while a process an earlier operator started does
// (what keeps a running cluster out of the start queue after an operator
// restart), and not once that process is gone; a foreign process whose pid
// record was tampered with (another start time) does not count.
func TestRunningBeforeAdoption(t *testing.T) {
	ref := runtime.ControlPlaneRef{Namespace: "ns-r", Name: "r"}
	root, rt, _ := startEtcd(t, ref)
	if !rt.Running(ref) {
		t.Fatal("the runtime that started etcd says nothing runs")
	}
	pid := status(rt, ref).PID
	rt.Release()

	fresh := newRuntime(t, root)
	if !fresh.Running(ref) {
		t.Error("a new runtime says nothing runs while the earlier one's etcd does")
	}
	if fresh.Running(runtime.ControlPlaneRef{Namespace: "ns-other", Name: "other"}) {
		t.Error("a control plane with no directory runs")
	}

	// The record names the live pid with another start time: a reused pid.
	pidPath := filepath.Join(root, ref.Namespace, "etcd-0", "pid.json")
	good := editPidRecord(t, pidPath, func(rec map[string]any) { rec["startTime"] = 1 })
	if fresh.Running(ref) {
		t.Error("a pid record whose start time does not match counts as running")
	}
	if err := os.WriteFile(pidPath, good, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fresh.Running(ref) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if fresh.Running(ref) {
		t.Error("still running after its only process was killed")
	}
}

// editPidRecord rewrites the pid record at path as edit changes it and
// returns what it held before.
func editPidRecord(t *testing.T, path string, edit func(map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]any{}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	edit(rec)
	edited, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	return raw
}
