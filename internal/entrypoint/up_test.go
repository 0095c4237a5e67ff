package entrypoint

import (
	"slices"
	"testing"

	"hypershift.dev/internal/clusterclient"
)

// TestUpChildFlags: `up --detach` passes every flag the user set to the
// background process, but not those of the detaching itself.
func TestUpChildFlags(t *testing.T) {
	cmd := newUpCommand(&clusterclient.Management{})
	if err := cmd.ParseFlags([]string{"--detach", "--timeout=1m", "--max-starting-control-planes=1", "--control-plane-nice=3", "--endpoint-host=10.0.0.1", "--leaf-certificate-validity=1h", "--machines-dir=/m"}); err != nil {
		t.Fatal(err)
	}
	got := childFlags(cmd)
	slices.Sort(got)
	want := []string{"--control-plane-nice=3", "--endpoint-host=10.0.0.1", "--leaf-certificate-validity=1h0m0s", "--machines-dir=/m", "--max-starting-control-planes=1"}
	if !slices.Equal(got, want) {
		t.Errorf("childFlags = %v, want %v", got, want)
	}
}
