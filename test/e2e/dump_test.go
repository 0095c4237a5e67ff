package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDumpCluster makes a hosted cluster's scheduler crash-loop — its port
// taken by another listener, so every restart fails — and dumps the
// cluster: the summary names the component and its state, the archive
// holds its last log lines with the failure, and no private key, token or
// Secret value of the cluster is anywhere in it.
func TestDumpCluster(t *testing.T) {
	ownDirAndPorts(t)
	hs := upCLI(t)
	hs.must("create", "cluster", "none", "--name", "d", "--wait", "--timeout", "4m")
	cpDir := filepath.Join(hs.dataDir, "clusters", "clusters-d")
	raw, err := os.ReadFile(filepath.Join(cpDir, "ports.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ports map[string]int
	if err := json.Unmarshal(raw, &ports); err != nil {
		t.Fatal(err)
	}
	port := ports["kube-scheduler"]
	if port == 0 {
		t.Fatalf("no kube-scheduler port in %s", raw)
	}
	// Kill the scheduler the runtime recorded and take its port before
	// the runtime restarts it.
	if err := syscall.Kill(instancePID(t, hs.dataDir, "d", "kube-scheduler"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var l net.Listener
	eventually(t, 10*time.Second, "the scheduler's port free", func() error {
		l, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		return err
	})
	defer l.Close()
	eventually(t, 2*time.Minute, "kube-scheduler in BackOff after 2 restarts", func() error {
		out := hs.must("describe", "cluster", "d")
		if !regexpMatch(out, `(?m)^\s+kube-scheduler\s+BackOff\s+\d+\s+([2-9]|\d\d)\s`) {
			return errorf("describe:\n%s", out)
		}
		return nil
	})

	dump := filepath.Join(t.TempDir(), "dump")
	out := hs.must("dump", "cluster", "d", "-o", dump)
	if !strings.Contains(out, "wrote "+dump) {
		t.Errorf("dump printed %q", out)
	}
	summary, err := os.ReadFile(filepath.Join(dump, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary.txt:\n%s", summary)
	// Between two failed starts the scheduler is BackOff, then Starting
	// until its next start fails (seconds on a loaded machine): either
	// names it, with its restarts and its last exit.
	if !regexpMatch(string(summary), `kube-scheduler is (BackOff|Starting) after ([2-9]|\d\d+) restarts \(last exit: Error`) {
		t.Errorf("summary does not name the crash-looping scheduler:\n%s", summary)
	}
	schedLog, err := os.ReadFile(filepath.Join(dump, "components", "logs", "kube-scheduler.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(schedLog), "address already in use") {
		t.Errorf("the scheduler's log tail lacks its failure:\n%s", schedLog)
	}
	for _, f := range []string{"management/hostedcluster.yaml", "management/hostedcontrolplane.yaml", "management/secrets.yaml", "management/events.txt", "hosted/nodes.yaml", "hosted/events.yaml"} {
		if _, err := os.Stat(filepath.Join(dump, f)); err != nil {
			t.Errorf("dump lacks %s: %v", f, err)
		}
	}

	// No key material: every value of every Secret of the cluster (its
	// control-plane namespace, its admin kubeconfig), raw or base64, and
	// nothing shaped like a private key or token.
	mgmt := hostedClient(t, filepath.Join(hs.dataDir, "management.kubeconfig"))
	var needles []string
	for _, ns := range []string{"clusters-d", "clusters"} {
		secrets, err := mgmt.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets.Items {
			for _, v := range s.Data {
				if len(strings.TrimSpace(string(v))) >= 8 {
					needles = append(needles, strings.TrimSpace(string(v)), base64.StdEncoding.EncodeToString(v))
				}
			}
		}
	}
	if len(needles) < 20 {
		t.Fatalf("found only %d secret values to look for: the cluster's PKI was not read", len(needles))
	}
	needles = append(needles, "PRIVATE KEY")
	for _, n := range needles {
		if dirContains(t, dump, n) {
			t.Errorf("the dump contains a secret value (%.20q…)", n)
		}
	}
}
