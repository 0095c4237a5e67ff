package e2e

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/runtime/process"
)

// recordedProcess is a process a runtime recorded in a pid.json.
type recordedProcess struct {
	file      string
	pid       int
	startTime uint64
}

// recordedProcesses reads every pid.json under dir.
func recordedProcesses(t *testing.T, dir string) []recordedProcess {
	t.Helper()
	var out []recordedProcess
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "pid.json" {
			return nil //nolint:nilerr // a directory going away is not a failure here
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil //nolint:nilerr // removed meanwhile
		}
		var rec struct {
			PID       int    `json:"pid"`
			StartTime uint64 `json:"startTime"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		out = append(out, recordedProcess{file: path, pid: rec.PID, startTime: rec.StartTime})
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// running reports whether the recorded process still runs: its pid exists
// with the recorded start time (not a reused pid).
func (p recordedProcess) running() bool {
	st, err := process.StartTime(p.pid)
	return err == nil && st == p.startTime
}

// TestHibernation: a cluster with a simulated NodePool hibernates (every
// process of its control plane and its node agent stops, its data stays)
// and resumes with its objects and Ready nodes.
func TestHibernation(t *testing.T) {
	ownDirAndPorts(t)
	hs := upCLI(t)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	hs.must("create", "cluster", "simulated", "--name", "h", "--node-pool-replicas", "2", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("h")
	mustKubectl(t, kc, "create", "namespace", "kept")
	mustKubectl(t, kc, "-n", "kept", "create", "configmap", "c", "--from-literal=k=v1")
	eventually(t, 2*time.Minute, "2 Ready nodes", func() error { return wantReadyNodes(t, kc, 2) })

	cpDir := filepath.Join(hs.dataDir, "clusters", "clusters-h")
	agentDir := filepath.Join(hs.dataDir, "nodes", "clusters-h")
	before := append(recordedProcesses(t, cpDir), recordedProcesses(t, agentDir)...)
	var components, agents int
	for _, p := range before {
		if strings.HasPrefix(p.file, agentDir) {
			agents++
		} else {
			components++
		}
	}
	if components < 5 || agents != 1 {
		t.Fatalf("recorded processes before hibernating: %d of the control plane, %d agents; want ≥ 5 and 1: %v", components, agents, before)
	}

	out := hs.must("hibernate", "cluster", "h", "--wait", "--timeout", "2m")
	if !strings.Contains(out, "is hibernated") {
		t.Errorf("hibernate --wait output:\n%s", out)
	}

	t.Run("no process of the cluster remains, its data does", func(t *testing.T) {
		eventually(t, time.Minute, "the node agent to stop", func() error {
			for _, p := range before {
				if p.running() {
					return errorf("%s: pid %d still runs", p.file, p.pid)
				}
			}
			if left := append(recordedProcesses(t, cpDir), recordedProcesses(t, agentDir)...); len(left) > 0 {
				return errorf("pid records left: %v", left)
			}
			return nil
		})
		if pids := pidsUnder(t, cpDir); len(pids) > 0 {
			t.Errorf("processes still name the control-plane directory: %v", pids)
		}
		entries, err := os.ReadDir(filepath.Join(cpDir, "etcd-0", "data"))
		if err != nil || len(entries) == 0 {
			t.Errorf("etcd's data directory is gone or empty while hibernated: %v", err)
		}
	})

	t.Run("status says Hibernated", func(t *testing.T) {
		if got := hcCondition(t, mgmt, "h", "Hibernated"); got != "True/Hibernated" {
			t.Errorf("Hibernated = %s, want True/Hibernated", got)
		}
		if got := hcCondition(t, mgmt, "h", "Available"); got != "False/Hibernated" {
			t.Errorf("Available = %s, want False/Hibernated", got)
		}
		if out := hs.must("get", "clusters"); !regexpMatch(out, `(?m)^clusters\s+h\s+.*\sHibernated\s`) {
			t.Errorf("get clusters does not show the cluster Hibernated:\n%s", out)
		}
		if out := hs.must("describe", "cluster", "h"); !strings.Contains(out, "Hibernation state:") || !strings.Contains(out, "Hibernated") {
			t.Errorf("describe cluster does not show hibernation:\n%s", out)
		}
		eventually(t, time.Minute, "the NodePool to say its cluster hibernates", func() error {
			out, _ := kubectl(t, mgmt, "-n", "clusters", "get", "nodepool", "h", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`)
			if strings.TrimSpace(out) != "HostedClusterHibernated" {
				return errorf("NodePool Ready reason %q", out)
			}
			return nil
		})
	})

	hs.must("resume", "cluster", "h", "--wait", "--timeout", "3m")

	t.Run("resumed: objects are there and nodes Ready again", func(t *testing.T) {
		if got := mustKubectl(t, kc, "-n", "kept", "get", "configmap", "c", "-o", "jsonpath={.data.k}"); got != "v1" {
			t.Errorf("configmap kept/c = %q after resume, want v1", got)
		}
		if got := hcCondition(t, mgmt, "h", "Hibernated"); !strings.HasPrefix(got, "False/") {
			t.Errorf("Hibernated = %s after resume, want False", got)
		}
		eventually(t, 3*time.Minute, "the agent back and 2 Ready nodes", func() error {
			if len(recordedProcesses(t, agentDir)) != 1 {
				return errorf("agent not running again")
			}
			return wantReadyNodes(t, kc, 2)
		})
		mustKubectl(t, kc, "-n", "kept", "create", "configmap", "after", "--from-literal=k=v2")
	})
}

// TestIdleWake: a cluster that hibernates when idle sleeps after idleAfter
// with only its endpoint proxy left, and a plain `kubectl get ns` with the
// admin kubeconfig wakes it and succeeds.
func TestIdleWake(t *testing.T) {
	ownDirAndPorts(t)
	// 30 s idle from when the cluster became Available: `create --wait`
	// then publishes the join command (a request to the hosted API server)
	// before it sleeps, however long the start took on a busy machine.
	hs := upCLI(t)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	hs.must("create", "cluster", "none", "--name", "idle", "--idle-hibernate-after", "30s", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("idle")
	mustKubectl(t, kc, "create", "namespace", "woken")

	eventually(t, 2*time.Minute, "idle hibernation", func() error {
		if got := hcCondition(t, mgmt, "idle", "Hibernated"); got != "True/IdleHibernated" {
			return errorf("Hibernated = %s", got)
		}
		return nil
	})
	cpDir := filepath.Join(hs.dataDir, "clusters", "clusters-idle")
	left := recordedProcesses(t, cpDir)
	if len(left) != 1 || !strings.Contains(left[0].file, "kube-apiserver-proxy") || !left[0].running() {
		t.Fatalf("while idle-hibernated, want only the endpoint proxy running; recorded: %v", left)
	}

	start := time.Now()
	out, err := kubectl(t, kc, "get", "ns")
	// The proxy holds the connection, TLS untouched: a client waits for
	// the server's half of the handshake, and client-go gives up on it
	// after 10 s (and the test's kubectl on a request after 20 s). A wake
	// longer than that on a busy machine fails the first request; the
	// wake goes on, and the next is answered.
	if err != nil && time.Since(start) >= 10*time.Second &&
		(strings.Contains(out, "TLS handshake timeout") || saysTimedOut(out)) {
		t.Logf("kubectl get ns gave up after %.1fs while the cluster woke (%s); asking again", time.Since(start).Seconds(), lastLines(out, 1))
		out, err = kubectl(t, kc, "get", "ns")
	}
	if err != nil || !strings.Contains(out, "woken") {
		t.Fatalf("kubectl get ns on an idle-hibernated cluster: %v\n%s", err, out)
	}
	t.Logf("kubectl get ns answered after %.1fs (wake on request)", time.Since(start).Seconds())
	eventually(t, time.Minute, "the cluster to report it runs", func() error {
		if got := hcCondition(t, mgmt, "idle", "Available"); got != "True/AsExpected" {
			return errorf("Available = %s", got)
		}
		return nil
	})
}
