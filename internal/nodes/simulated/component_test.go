package simulated

import (
	"slices"
	"testing"
)

// TestAgentArgsAsTheControllerRendersThem: the flags of a pool's agent (the
// NodePool controller sets these four) render as they always have, so the
// agents' specs, and their hashes, stay the same.
func TestAgentArgsAsTheControllerRendersThem(t *testing.T) {
	c := DefaultAgentConfig()
	c.BootstrapKubeconfig = "/data/nodes/clusters-workers/simulated-agent/bootstrap.kubeconfig"
	c.NodePool = "workers"
	c.CertDir = "/data/nodes/clusters-workers/simulated-agent/pki"
	c.HealthAddress = "127.0.0.1:41234"
	want := []string{
		"--bootstrap-kubeconfig=/data/nodes/clusters-workers/simulated-agent/bootstrap.kubeconfig",
		"--nodepool=workers",
		"--cert-dir=/data/nodes/clusters-workers/simulated-agent/pki",
		"--health-address=127.0.0.1:41234",
	}
	if got := c.Args(); !slices.Equal(got, want) {
		t.Errorf("Args() = %q, want %q", got, want)
	}
}

// TestRunDefaultsAreTheFlagDefaults: a caller of Run that leaves a limit
// zero gets the same value as the command line's default.
func TestRunDefaultsAreTheFlagDefaults(t *testing.T) {
	d := DefaultAgentConfig()
	var o Options
	o.defaults()
	if o.QPS != float32(d.QPS) || o.Burst != d.Burst || o.Joins != d.ConcurrentJoins || o.PodWorkers != d.PodWorkers {
		t.Errorf("Run defaults %+v differ from the flag defaults %+v", o, d)
	}
}

func TestParseAgentArgsRefusesUnknownFlags(t *testing.T) {
	if _, err := ParseAgentArgs([]string{"--node-pool=workers"}); err == nil {
		t.Error("an unknown flag was accepted")
	}
}
