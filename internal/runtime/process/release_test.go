package process_test

import (
	"strings"
	"testing"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

// TestUnavailableReleaseKeepsTheRunningProcess: a spec of a Kubernetes
// version the install has no release of fails its instance with a message
// naming the versions it has, and the process of the earlier spec keeps
// serving; the earlier spec applied again adopts it.
func TestUnavailableReleaseKeepsTheRunningProcess(t *testing.T) {
	ref := runtime.ControlPlaneRef{Namespace: "ns-r", Name: "r"}
	_, rt, spec := startEtcd(t, ref)
	before := status(rt, ref)
	if before.Version != "" {
		t.Errorf("an instance of the compiled-in release reports version %q, want empty", before.Version)
	}

	unavailable := spec
	unavailable.Version = "v1.20.0"
	if err := rt.Apply(t.Context(), ref, []runtime.Spec{unavailable}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the instance to fail", func() bool { return status(rt, ref).Phase == runtime.BackOff })
	s := status(rt, ref)
	for _, want := range []string{"etcd-0 runs Kubernetes v1.20.0, which this install does not have", "it runs " + version.KubernetesVersion} {
		if !strings.Contains(s.Message, want) {
			t.Errorf("status message %q lacks %q", s.Message, want)
		}
	}
	if !processAlive(before.PID) {
		t.Fatal("the process of the earlier spec was stopped for a spec that cannot run")
	}

	if err := rt.Apply(t.Context(), ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the earlier process adopted", func() bool {
		s := status(rt, ref)
		return s.Phase == runtime.Running && s.PID == before.PID
	})

	// Stopped while its new spec cannot run, the instance stops the
	// process it left serving.
	if err := rt.Apply(t.Context(), ref, []runtime.Spec{unavailable}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the instance to fail again", func() bool { return status(rt, ref).Phase == runtime.BackOff })
	rt.Stop(t.Context(), ref)
	if processAlive(before.PID) {
		t.Error("the process of the earlier spec outlived Stop")
	}
}
