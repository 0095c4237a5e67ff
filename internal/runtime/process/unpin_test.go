package process_test

import (
	"os"
	"testing"

	"hypershift.dev/internal/runtime"
)

// TestUnpinPortsRemovesOnlyThePin: a pin of a control plane that never ran
// is taken back with its directory; a directory that holds anything else
// (a control plane that ran, someone else's file) is left as it is.
func TestUnpinPortsRemovesOnlyThePin(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	ref := runtime.ControlPlaneRef{Namespace: "clusters-a", Name: "a"}
	if pinned, err := rt.PinPorts(ref, map[string]int{"endpoint": 31000}); err != nil || !pinned {
		t.Fatalf("PinPorts = %v, %v", pinned, err)
	}
	if err := rt.UnpinPorts(ref); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rt.Dir(ref)); !os.IsNotExist(err) {
		t.Fatalf("the pinned control plane's directory is still there (%v)", err)
	}
	if err := rt.UnpinPorts(ref); err != nil {
		t.Fatalf("unpinning twice: %v", err)
	}

	other := runtime.ControlPlaneRef{Namespace: "clusters-b", Name: "b"}
	if _, err := rt.PinPorts(other, map[string]int{"endpoint": 31001}); err != nil {
		t.Fatal(err)
	}
	foreign := rt.Dir(other) + "/kept"
	if err := os.WriteFile(foreign, []byte("not the pin's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := rt.UnpinPorts(other); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{foreign, rt.Dir(other) + "/ports.json"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s was removed from a directory that holds more than the pin: %v", p, err)
		}
	}
}

// TestPinPortsRefusesAHeldPort: a restored control plane cannot pin a port
// that another control plane of the same runtime holds, even while that
// one listens on nothing; once the holder is deleted the port is free to
// pin again.
func TestPinPortsRefusesAHeldPort(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	holder := runtime.ControlPlaneRef{Namespace: "clusters-a", Name: "a"}
	ports, err := rt.Ports(t.Context(), holder, runtime.Named("endpoint"))
	if err != nil {
		t.Fatal(err)
	}
	restored := runtime.ControlPlaneRef{Namespace: "clusters-b", Name: "b"}
	pinned, err := rt.PinPorts(restored, map[string]int{"endpoint": ports["endpoint"]})
	if err == nil || pinned {
		t.Fatalf("PinPorts of a held port = %v, %v; want an error", pinned, err)
	}
	if _, statErr := os.Stat(rt.Dir(restored) + "/ports.json"); !os.IsNotExist(statErr) {
		t.Errorf("a refused pin left ports.json behind (%v)", statErr)
	}
	// A pinned port is held too: a new control plane is not handed it.
	third := runtime.ControlPlaneRef{Namespace: "clusters-c", Name: "c"}
	if _, err := rt.PinPorts(third, map[string]int{"endpoint": 31002}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.PinPorts(restored, map[string]int{"endpoint": 31002}); err == nil {
		t.Error("two control planes pinned the same port")
	}

	if err := rt.Delete(t.Context(), holder); err != nil {
		t.Fatal(err)
	}
	if pinned, err := rt.PinPorts(restored, map[string]int{"endpoint": ports["endpoint"]}); err != nil || !pinned {
		t.Errorf("PinPorts of a deleted control plane's port = %v, %v; want it pinned", pinned, err)
	}
}
