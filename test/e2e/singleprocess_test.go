package e2e

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSingleProcessControlPlane: with --single-process-control-plane the
// API server, controller manager and scheduler run as one process next to
// etcd and the Konnectivity server, and all three do their work — the controller manager signs node
// certificates and makes ReplicaSets, the scheduler places pods — and a
// SIGKILL of that process is recovered like any component's.
func TestSingleProcessControlPlane(t *testing.T) {
	ownDirAndPorts(t)
	hs := sharedPlane(t)

	if stderr := hs.fails("create", "cluster", "none", "--name", "ha", "--single-process-control-plane", "--availability-policy", "HighlyAvailable"); !strings.Contains(stderr, "needs --availability-policy SingleReplica") {
		t.Errorf("single process with HighlyAvailable: %s", stderr)
	}
	hs.must("create", "cluster", "simulated", "--name", "one", "--single-process-control-plane", "--node-pool-replicas", "1", "--wait", "--timeout", "3m")
	cpDir := filepath.Join(hs.dataDir, "clusters", "clusters-one")
	pids := pidsUnder(t, cpDir)
	var names []string
	for cmd := range pids {
		names = append(names, cmd)
	}
	if len(pids) != 3 || !containsPrefix(names, "etcd#") || !containsPrefix(names, "konnectivity-server#") || !containsPrefix(names, "kube-control-plane#") {
		t.Fatalf("processes of the control plane: %v, want etcd, konnectivity-server and one kube-control-plane", names)
	}
	if out := hs.must("describe", "cluster", "one"); !regexpMatch(out, `kube-control-plane\s+Running`) {
		t.Errorf("describe does not show the single process running:\n%s", out)
	}

	kc := hs.adminKubeconfig("one")
	mustKubectl(t, kc, "create", "deployment", "web", "--image", "registry.invalid/web:1", "--replicas", "2")
	eventually(t, 2*time.Minute, "2 pods Running on the simulated node", func() error {
		out, _ := kubectl(t, kc, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}")
		if strings.Count(out, "Running") != 2 {
			return errorf("pod phases %q", out)
		}
		return nil
	})

	for cmd, pid := range pidsUnder(t, cpDir) {
		if strings.HasPrefix(cmd, "kube-control-plane#") {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, time.Minute, "the API answers again after SIGKILL", func() error {
		_, err := kubectl(t, kc, "get", "deployment", "web")
		return err
	})
	eventually(t, time.Minute, "controllers work again", func() error {
		_, err := kubectl(t, kc, "scale", "deployment", "web", "--replicas", "3")
		if err != nil {
			return err
		}
		out, _ := kubectl(t, kc, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}")
		if strings.Count(out, "Running") != 3 {
			return errorf("pod phases %q", out)
		}
		return nil
	})
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
