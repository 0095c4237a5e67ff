package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"hypershift.dev/internal/nodes/join"
)

// TestCARotationRealNode rotates the CAs of a cluster whose node is
// this host (a wholeHost test: one at a time): besides what
// TestCARotation checks, the node stays Ready (but for one window of at
// most 10 s, while its kubelet restarts for the new trust), a pod started
// before keeps running (same container, no restart), and `kubectl logs`
// and `exec` work afterwards with the new admin kubeconfig (through the
// Konnectivity tunnel of the new Konnectivity CA).
func TestCARotationRealNode(t *testing.T) {
	quietWholeHost(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping the real node: not root, and containerd and the kubelet need root")
	}
	if _, err := join.CheckHost(join.DefaultCNIBinDir); err != nil {
		t.Fatalf("%v (run `make deps` as root)", err)
	}
	hs := upCLI(t)
	start := time.Now()
	out := hs.must("create", "cluster", "none", "--name", "c", "--wait", "--timeout", "3m")
	budget := realNodeRestartBudget.slowMachine(time.Since(start))
	joinArgs := joinCommandArgs(t, out)
	kc := filepath.Join(hs.dataDir, "c.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "c", "-o", kc)
	nodeDir := filepath.Join(shortTempDir(t), "node")
	resetWhenDone(t, hs, nodeDir)
	if out := hs.must(append(joinArgs, "--node-dir", nodeDir)...); !regexpMatch(out, `node \S+ is Ready`) {
		t.Fatalf("join did not report a Ready node:\n%s", out)
	}
	hs.must("node", "load-image", buildHelloImage(t), "--node-dir", nodeDir)
	pod := filepath.Join(t.TempDir(), "pod.yaml")
	writeFile(t, pod, `apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  containers:
  - name: hello
    image: hypershift.test/hello:1
    imagePullPolicy: Never
`)
	mustKubectl(t, kc, "apply", "-f", pod)
	mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/hello", "--timeout=120s")
	containerBefore := mustKubectl(t, kc, "get", "pod", "hello", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	cas := readOnceCAs(t, hs)

	// `kubectl logs` once a second while the nodes are Ready, by phase:
	// measured, not asserted (the kubelet restarts for the trust changes;
	// what must hold after the rotation is checked below).
	mgmt := dynamicClient(t, filepath.Join(hs.dataDir, "management.kubeconfig"))
	var logsMu sync.Mutex
	logsOK, logsFailed := map[string]int{}, map[string]int{}
	run := rotateWatching(t, hs, kc, func(ctx context.Context, cs *kubernetes.Clientset) error {
		if err := allNodesReady(ctx, cs, 1); err != nil {
			return err
		}
		phase, _ := rotationPhase(ctx, mgmt)
		_, err := cs.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
		logsMu.Lock()
		defer logsMu.Unlock()
		if err != nil {
			logsFailed[phase]++
		} else {
			logsOK[phase]++
		}
		return nil
	})
	logsMu.Lock()
	t.Logf("kubectl logs during the rotation: ok by phase %v, failed by phase %v", logsOK, logsFailed)
	logsMu.Unlock()
	run.check(t, budget)
	cas.checkReplaced(t, hs)

	newKC := filepath.Join(hs.dataDir, "c-after.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "c", "-o", newKC)
	// The kubelet renewed its serving certificate for the new kubelet CA,
	// the only one the API server trusts from DropOld on.
	checkServingFromKubeletCA(t, hs, true)
	got := mustKubectl(t, newKC, "get", "pod", "hello", "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount} {.status.phase}")
	if want := containerBefore + " 0 Running"; got != want {
		status, _ := kubectl(t, newKC, "get", "pod", "hello", "-o", "jsonpath={.status}")
		events, _ := kubectl(t, newKC, "get", "events", "--field-selector", "involvedObject.name=hello")
		t.Errorf("pod hello after the rotation: %q, want %q (the same container, never restarted)\nstatus: %s\nevents:\n%s", got, want, status, events)
	}
	// The API server reaches the kubelet over connections it pools; the
	// first request on one opened before the kubelet's last restart can
	// end in EOF (docs/security.md, "CA rotation"), so each is given a
	// few attempts, and the attempts are reported.
	attempts := 0
	eventually(t, 30*time.Second, "kubectl logs and exec work with the new admin kubeconfig", func() error {
		attempts++
		if logs, err := kubectl(t, newKC, "logs", "hello"); err != nil || !strings.Contains(logs, "hello from hello") {
			return errorf("kubectl logs = %q, %v", logs, err)
		}
		if out, err := kubectl(t, newKC, "exec", "hello", "--", "/hello", "exec", "works"); err != nil || strings.TrimSpace(out) != "exec works" {
			return errorf("kubectl exec = %q, %v", out, err)
		}
		return nil
	})
	t.Logf("kubectl logs and exec worked after %d attempt(s)", attempts)
}
