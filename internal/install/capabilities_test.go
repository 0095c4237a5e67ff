package install

import "testing"

// TestCapabilitiesOfNameTheRuntime: the runtime policy's label, which
// clients read to choose defaults, is the runtime's name as --runtime
// takes it.
func TestCapabilitiesOfNameTheRuntime(t *testing.T) {
	for _, rt := range []string{RuntimeProcess, RuntimeKube} {
		if got := capabilitiesOf(rt).Name; got != rt {
			t.Errorf("capabilitiesOf(%q).Name = %q", rt, got)
		}
		if p, _ := runtimePolicy(rt, nil); p.Labels[RuntimeLabel] != rt {
			t.Errorf("runtime policy of %q labelled %v", rt, p.Labels)
		}
	}
}
