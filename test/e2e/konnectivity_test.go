package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKonnectivityServer: a hosted control plane runs its Konnectivity
// server, its API server is healthy with the egress selector configuration
// and sends traffic for the cluster (here to a node's kubelet) to the
// tunnel, whose server answers that no agent is connected yet.
func TestKonnectivityServer(t *testing.T) {
	hs := newCLI(t)
	hs.must("up", "--detach", "--metrics-bind-address", "0")
	t.Cleanup(func() { hs.run("down", "--purge") })
	hs.must("create", "cluster", "simulated", "--name", "k", "--node-pool-replicas", "1", "--wait", "--timeout", "3m")

	if out := hs.must("describe", "cluster", "k"); !regexpMatch(out, `konnectivity-server\s+Running`) {
		t.Errorf("describe does not show the Konnectivity server running:\n%s", out)
	}
	cpDir := filepath.Join(hs.dataDir, "clusters", "clusters-k")
	var apiServerArgs string
	for name, pid := range pidsUnder(t, cpDir) {
		if strings.HasPrefix(name, "kube-apiserver#") {
			raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if err != nil {
				t.Fatal(err)
			}
			apiServerArgs = strings.ReplaceAll(string(raw), "\x00", " ")
		}
	}
	if !strings.Contains(apiServerArgs, "--egress-selector-config-file=") || !strings.Contains(apiServerArgs, "--endpoint-reconciler-type=none") {
		t.Errorf("kube-apiserver runs without the egress selector or with an endpoint reconciler: %s", apiServerArgs)
	}

	kc := filepath.Join(hs.dataDir, "k.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "k", "-o", kc)
	if out := mustKubectl(t, kc, "get", "--raw", "/readyz"); out != "ok" {
		t.Errorf("/readyz: %q", out)
	}
	// The API server reaches a node's kubelet through the tunnel only.
	node := strings.TrimPrefix(strings.TrimSpace(mustKubectl(t, kc, "get", "nodes", "-o", "name")), "node/")
	eventually(t, time.Minute, "the node proxy to answer from the tunnel", func() error {
		out, err := kubectl(t, kc, "get", "--raw", "/api/v1/nodes/"+node+"/proxy/healthz")
		if err == nil || !strings.Contains(out, "No agent available") {
			return errorf("node proxy without agents: %v: %s", err, out)
		}
		return nil
	})
}
