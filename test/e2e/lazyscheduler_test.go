package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSchedulerStartsWithFirstNodePool: a cluster without NodePools runs no
// scheduler (nothing to schedule); its first NodePool starts one, and a
// pod created before is scheduled onto the pool's node.
func TestSchedulerStartsWithFirstNodePool(t *testing.T) {
	ownDirAndPorts(t)
	hs := sharedPlane(t)
	hs.must("create", "cluster", "simulated", "--name", "s", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("s")
	scheduler := filepath.Join(hs.dataDir, "clusters", "clusters-s", "kube-scheduler")
	// A few passes after Available: nothing brings the scheduler.
	time.Sleep(3 * time.Second)
	if anyRunning(recordedProcesses(t, scheduler)) {
		t.Fatal("a cluster without NodePools runs a scheduler")
	}
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	if out := mustKubectl(t, mgmt, "-n", "clusters-s", "get", "hostedcontrolplane", "s", "-o", "jsonpath={.status.components[*].name}"); strings.Contains(out, "kube-scheduler") || !strings.Contains(out, "kube-controller-manager") {
		t.Errorf("components of a cluster without NodePools: %s", out)
	}
	// The controller manager makes the namespace's default ServiceAccount,
	// which admission needs for a pod, a moment after Available.
	eventually(t, time.Minute, "the default ServiceAccount", func() error {
		_, err := kubectl(t, kc, "get", "serviceaccount", "default")
		return err
	})
	mustKubectl(t, kc, "run", "waiting", "--image=registry.example/pause:1", "--restart=Never")

	hs.must("create", "nodepool", "--cluster-name", "s", "--name", "p", "--replicas", "1")
	eventually(t, 2*time.Minute, "the scheduler running", func() error {
		if !anyRunning(recordedProcesses(t, scheduler)) {
			return errorf("no kube-scheduler process")
		}
		return nil
	})
	eventually(t, 2*time.Minute, "the pod created before scheduled", func() error {
		node, err := kubectl(t, kc, "get", "pod", "waiting", "-o", "jsonpath={.spec.nodeName}")
		if err != nil || strings.TrimSpace(node) == "" {
			return errorf("pod not scheduled: %q %v", node, err)
		}
		return nil
	})

	// Deleting the pool keeps the scheduler: it never flaps.
	mustKubectl(t, mgmt, "-n", "clusters", "delete", "nodepool", "p", "--wait")
	time.Sleep(3 * time.Second)
	if !anyRunning(recordedProcesses(t, scheduler)) {
		t.Error("the scheduler stopped when the NodePool went")
	}
}
