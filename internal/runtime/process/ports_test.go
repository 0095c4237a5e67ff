package process_test

import (
	"fmt"
	"testing"

	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// TestPortsOutsideTheEphemeralRange: every port handed out lies in
// 20000–29999 and outside the kernel's ephemeral range, where outgoing
// connections take their source ports (a restarting component would find
// its port taken by one), and no two are the same.
func TestPortsOutsideTheEphemeralRange(t *testing.T) {
	rt := newRuntime(t, testenv.ShortTempDir(t))
	low, high := hostnet.EphemeralPorts()
	if low <= 20000 && high >= 29999 {
		t.Skipf("the ephemeral range %d-%d covers 20000-29999: any port of it is picked", low, high)
	}
	seen := map[int]string{}
	for i := range 5 {
		ref := runtime.ControlPlaneRef{Namespace: fmt.Sprintf("ns-%d", i), Name: "c"}
		names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		ports, err := rt.Ports(t.Context(), ref, runtime.Named(names...))
		if err != nil {
			t.Fatal(err)
		}
		for name, port := range ports {
			where := ref.Namespace + "/" + name
			if port < 20000 || port > 29999 || (port >= low && port <= high) {
				t.Errorf("%s got port %d, want 20000-29999 outside the ephemeral range %d-%d", where, port, low, high)
			}
			if other, dup := seen[port]; dup {
				t.Errorf("port %d handed out twice: %s and %s", port, other, where)
			}
			seen[port] = where
		}
	}
}
