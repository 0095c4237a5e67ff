package e2e

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartQueue: with one start at a time, four clusters created at once
// start one after the other: the others say Queued with their place (in the
// status and in `get clusters`), never more than one is starting (its
// processes run, its API not Available yet; a sample may catch a second in
// the hand-over from one start to the next), and all become Available; an
// operator restart then queues none of them.
func TestStartQueue(t *testing.T) {
	quiet(t)
	hs := upCLI(t, "--max-starting-control-planes", "1")
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	names := []string{"q1", "q2", "q3", "q4"}
	for _, n := range names {
		hs.must("create", "cluster", "none", "--name", n)
	}

	type clusterState struct {
		available bool
		position  int32
	}
	maxStarting, maxPosition, getShowedQueue := 0, int32(0), false
	// A sample may see the next start's processes before the status of the
	// start it follows says Available: once per hand-over at most.
	overSamples := 0
	deadline := time.Now().Add(4 * time.Minute)
	lastGet := time.Time{}
	for {
		// Processes first, then the status: a cluster seen starting may have
		// become Available by the time the status is read, never the other
		// way round.
		running := map[string]bool{}
		for _, n := range names {
			running[n] = anyRunning(recordedProcesses(t, filepath.Join(hs.dataDir, "clusters", "clusters-"+n)))
		}
		// The control planes' own status: a HostedCluster mirrors it a pass
		// later.
		out := mustKubectl(t, mgmt, "get", "hostedcontrolplanes", "-A", "-o", "json")
		var list struct {
			Items []struct {
				Metadata struct{ Name string }
				Status   struct {
					StartQueue *struct{ Position, Length int32 } `json:"startQueue"`
					Conditions []struct{ Type, Status, Reason string }
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		states := map[string]clusterState{}
		for _, hc := range list.Items {
			var s clusterState
			for _, c := range hc.Status.Conditions {
				if c.Type == "Available" && c.Status == "True" {
					s.available = true
				}
			}
			if q := hc.Status.StartQueue; q != nil {
				s.position = q.Position
				if q.Position < 1 || q.Position > q.Length || q.Length > int32(len(names)) {
					t.Errorf("%s queued at %d of %d", hc.Metadata.Name, q.Position, q.Length)
				}
				maxPosition = max(maxPosition, q.Position)
			}
			states[hc.Metadata.Name] = s
		}
		starting, available := 0, 0
		for _, n := range names {
			s := states[n]
			if s.available {
				available++
				continue
			}
			if running[n] {
				// Position 1 may be a status a pass behind an admission.
				if s.position > 1 {
					t.Errorf("%s is queued at %d but its processes run", n, s.position)
				}
				starting++
			}
		}
		maxStarting = max(maxStarting, starting)
		if starting > 1 {
			overSamples++
			t.Logf("two starting: %+v, processes %v", states, running)
		}
		if starting > 2 {
			t.Fatalf("%d clusters starting at once with --max-starting-control-planes 1: %+v", starting, states)
		}
		if time.Since(lastGet) > time.Second && maxPosition > 0 && !getShowedQueue {
			lastGet = time.Now()
			getShowedQueue = strings.Contains(hs.must("get", "clusters"), "Queued (")
		}
		if available == len(names) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clusters Available after 4 minutes: %+v", available, len(names), states)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("at most %d starting at once, the last in line at position %d", maxStarting, maxPosition)
	if overSamples > len(names)-1 {
		t.Errorf("two clusters starting at once in %d samples: more than the %d hand-overs", overSamples, len(names)-1)
	}
	if maxPosition < 2 {
		t.Errorf("no cluster waited behind another (highest position %d): four created at once with one start at a time", maxPosition)
	}
	if !getShowedQueue {
		t.Error("`get clusters` never showed a queued cluster")
	}
	// Queued clusters are no different once started.
	for _, n := range names {
		if out := mustKubectl(t, hs.adminKubeconfig(n), "get", "--raw", "/readyz"); out != "ok" {
			t.Errorf("%s /readyz: %q", n, out)
		}
	}
	if out := hs.must("get", "clusters"); strings.Contains(out, "Queued") {
		t.Errorf("get clusters after all started:\n%s", out)
	}

	// An operator restart queues none of them: their processes run on and
	// are adopted, and Available never leaves True (its transition time
	// would change).
	before := availableSince(t, mgmt)
	if err := syscall.Kill(upPID(t, hs.dataDir), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	hs.must("up", "--detach", "--metrics-bind-address", "0", "--max-starting-control-planes", "1")
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if out := mustKubectl(t, mgmt, "get", "hostedcontrolplanes", "-A", "-o", "jsonpath={.items[*].status.startQueue}"); strings.TrimSpace(out) != "" {
			t.Fatalf("running clusters queued after an operator restart: %s", out)
		}
	}
	if after := availableSince(t, mgmt); !maps.Equal(after, before) {
		t.Errorf("Available changed across an operator restart: before %v, after %v", before, after)
	}
}

// availableSince is each control plane's Available status and its last
// transition time.
func availableSince(t *testing.T, mgmt string) map[string]string {
	t.Helper()
	out := mustKubectl(t, mgmt, "get", "hostedcontrolplanes", "-A", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Available")].status}@{.status.conditions[?(@.type=="Available")].lastTransitionTime}{"\n"}{end}`)
	m := map[string]string{}
	for _, line := range strings.Fields(out) {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	if len(m) == 0 {
		t.Fatalf("no control planes listed: %q", out)
	}
	return m
}

func anyRunning(procs []recordedProcess) bool {
	for _, p := range procs {
		if p.running() {
			return true
		}
	}
	return false
}
