package process_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		pidPath := filepath.Join(root, ref.Namespace, "etcd-0", "pid.json")
		raw, err := os.ReadFile(pidPath)
		if err != nil {
			t.Fatal(err)
		}
		rec := map[string]any{}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		delete(rec, "startedAt")
		raw, _ = json.Marshal(rec)
		if err := os.WriteFile(pidPath, raw, 0o600); err != nil {
			t.Fatal(err)
		}
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
