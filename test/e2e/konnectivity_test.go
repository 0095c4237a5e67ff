package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKonnectivityServer: a hosted control plane runs one Konnectivity
// server, also when it is HighlyAvailable; every API server is healthy with
// the egress selector configuration and sends traffic for the cluster
// (here to a node's kubelet) to the tunnel, whose server answers that no
// agent is connected yet.
func TestKonnectivityServer(t *testing.T) {
	ownDirAndPorts(t)
	hs := sharedPlane(t)
	for name, apiServers := range map[string]int{"k": 1, "kha": 2} {
		t.Run(name, func(t *testing.T) {
			args := []string{"create", "cluster", "simulated", "--name", name, "--node-pool-replicas", "1", "--wait", "--timeout", "4m"}
			if apiServers > 1 {
				args = append(args, "--availability-policy", "HighlyAvailable")
			}
			hs.must(args...)
			if out := hs.must("describe", "cluster", name); !regexpMatch(out, `konnectivity-server\s+Running`) {
				t.Errorf("describe does not show the Konnectivity server running:\n%s", out)
			}
			servers, egress := 0, 0
			for cmd, pid := range pidsUnder(t, filepath.Join(hs.dataDir, "clusters", "clusters-"+name)+"/") {
				switch {
				case strings.HasPrefix(cmd, "konnectivity-server#"):
					servers++
				case strings.HasPrefix(cmd, "kube-apiserver#"):
					raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
					if err != nil {
						t.Fatal(err)
					}
					args := strings.ReplaceAll(string(raw), "\x00", " ")
					if strings.Contains(args, "--egress-selector-config-file=") && strings.Contains(args, "--endpoint-reconciler-type=none") {
						egress++
					} else {
						t.Errorf("kube-apiserver runs without the egress selector or with an endpoint reconciler: %s", args)
					}
				}
			}
			if servers != 1 || egress != apiServers {
				t.Errorf("%d Konnectivity servers and %d API servers using one, want 1 and %d", servers, egress, apiServers)
			}

			kc := hs.adminKubeconfig(name)
			if out := mustKubectl(t, kc, "get", "--raw", "/readyz"); out != "ok" {
				t.Errorf("/readyz: %q", out)
			}
			// The API servers reach a node's kubelet through the tunnel
			// only: a few requests, to whichever API server takes them.
			node := strings.TrimPrefix(strings.TrimSpace(mustKubectl(t, kc, "get", "nodes", "-o", "name")), "node/")
			for range 4 {
				eventually(t, time.Minute, "the node proxy to answer from the tunnel", func() error {
					out, err := kubectl(t, kc, "get", "--raw", "/api/v1/nodes/"+node+"/proxy/healthz")
					if err == nil || !strings.Contains(out, "No agent available") {
						return errorf("node proxy without agents: %v: %s", err, out)
					}
					return nil
				})
			}
		})
	}
}
