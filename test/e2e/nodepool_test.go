package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"hypershift.dev/internal/version"
)

// TestNodePools is the user's journey of simulated nodes: a cluster created
// with a pool of three, a Deployment running on them, the pool scaled down
// (its nodes drained with a PodDisruptionBudget honoured) and to zero, a
// pool naming a missing cluster, a pool deleted, and an autoscaled pool
// growing for pods that do not fit — while the hosted API keeps answering.
func TestNodePools(t *testing.T) {
	quiet(t)
	hs := upCLI(t)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")

	out := hs.must("create", "cluster", "simulated", "--name", "s", "--node-pool-replicas", "3", "--wait", "--timeout", "3m")
	if !strings.Contains(out, "nodepool s Ready=True: 3 of 3 nodes Ready") {
		t.Errorf("--wait does not report the pool Ready:\n%s", out)
	}
	kc := hs.adminKubeconfig("s")
	probe := startAPIProbe(t, kc)

	t.Run("three simulated nodes join", func(t *testing.T) {
		nodes := poolNodes(t, kc)
		if len(nodes) != 3 {
			t.Fatalf("nodes %v, want 3 Ready", nodes)
		}
		for name, n := range nodes {
			if !n.ready || n.version != version.KubernetesVersion || n.podCIDR == "" {
				t.Errorf("node %s: %+v, want Ready, kubelet %s and a pod CIDR", name, n, version.KubernetesVersion)
			}
		}
		desc := mustKubectl(t, kc, "get", "nodes", "-l", "hypershift.dev/nodepool=s,node.kubernetes.io/instance-type=simulated", "-o", "yaml")
		if !strings.Contains(desc, "no container is run") {
			t.Errorf("nodes do not say they are simulated:\n%s", desc)
		}
		eventually(t, time.Minute, "get clusters counts 3 of 3 nodes Ready", func() error {
			if out := hs.must("get", "clusters"); !regexpMatch(out, `(?m)^clusters\s+s\s+.*\s3/3\s`) {
				return errorf("get clusters:\n%s", out)
			}
			return nil
		})
		leases := mustKubectl(t, kc, "-n", "kube-node-lease", "get", "leases", "-o", "name")
		for name := range nodes {
			if !strings.Contains(leases, "lease.coordination.k8s.io/"+name) {
				t.Errorf("no Lease for %s:\n%s", name, leases)
			}
		}
		eventually(t, 30*time.Second, "serving CSRs approved", func() error {
			csrs := mustKubectl(t, kc, "get", "csr", "-o", "custom-columns=SIGNER:.spec.signerName,USER:.spec.username,COND:.status.conditions[*].type", "--no-headers")
			if n := strings.Count(csrs, "kubernetes.io/kubelet-serving"); n != 3 || strings.Count(csrs, "Approved") != 6 {
				return errorf("want 3 client and 3 serving CSRs approved:\n%s", csrs)
			}
			return nil
		})
		list := hs.must("get", "nodepools")
		if !regexpMatch(list, `clusters\s+s\s+s\s+3\s+3\s+3\s`) {
			t.Errorf("get nodepools:\n%s", list)
		}
		// Each node is bound to the pool whose token got its certificate,
		// with a label its kubelet cannot set.
		bound := mustKubectl(t, kc, "get", "nodes", "-l", "node-restriction.kubernetes.io/hypershift-nodepool=s", "-o", "name")
		if n := strings.Count(bound, "node/"); n != 3 {
			t.Errorf("%d nodes bound to pool s, want 3:\n%s", n, bound)
		}
		// The agent keeps the token in memory, not on disk.
		secret := mustKubectl(t, kc, "-n", "kube-system", "get", "secrets", "-l", "hypershift.dev/nodepool=s", "-o", "jsonpath={.items[0].data.token-secret}")
		tokenSecret, err := base64.StdEncoding.DecodeString(secret)
		if err != nil || len(tokenSecret) == 0 {
			t.Fatalf("the pool's token secret %q: %v", secret, err)
		}
		if dirContains(t, filepath.Join(hs.dataDir, "nodes", "clusters-s"), string(tokenSecret)) {
			t.Error("the agent left its bootstrap token on disk after its nodes joined")
		}
	})

	t.Run("a deployment runs on them", func(t *testing.T) {
		mustKubectl(t, kc, "create", "deployment", "web", "--image", "registry.invalid/pause:1", "--replicas", "6")
		eventually(t, time.Minute, "6 pods Running", func() error { return podsRunning(t, kc, 6, 6) })
		nodes := poolNodes(t, kc)
		for _, p := range listPods(t, kc) {
			_, cidr, err := net.ParseCIDR(nodes[p.node].podCIDR)
			if err != nil || !cidr.Contains(net.ParseIP(p.ip)) {
				t.Errorf("pod %s has IP %s outside its node %s's range %s", p.name, p.ip, p.node, nodes[p.node].podCIDR)
			}
		}
	})

	t.Run("scaling down drains nodes, honouring a PodDisruptionBudget", func(t *testing.T) {
		// First no web pod may go: the drain must wait.
		mustKubectl(t, kc, "create", "poddisruptionbudget", "web", "--selector", "app=web", "--min-available", "6")
		eventually(t, 30*time.Second, "the PDB to be computed", func() error {
			if got := mustKubectl(t, kc, "get", "pdb", "web", "-o", "jsonpath={.status.currentHealthy}/{.status.disruptionsAllowed}"); got != "6/0" {
				return errorf("currentHealthy/disruptionsAllowed %q", got)
			}
			return nil
		})
		start := time.Now()
		mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "s", "--replicas", "1")
		eventually(t, 30*time.Second, "the pool to report the blocked drain", func() error {
			msg := mustKubectl(t, mgmt, "-n", "clusters", "get", "nodepool", "s", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
			if !strings.Contains(msg, "refused by PodDisruptionBudgets") {
				return errorf("Ready message %q", msg)
			}
			return nil
		})
		time.Sleep(3 * time.Second) // a few drain rounds
		cordoned := mustKubectl(t, kc, "get", "nodes", "-o", "jsonpath={range .items[*]}{.spec.unschedulable}{\" \"}{end}")
		if n := len(poolNodes(t, kc)); n != 3 || strings.Count(cordoned, "true") != 2 {
			t.Fatalf("while the PDB allows nothing: %d nodes, unschedulable %q; want 3 nodes, 2 cordoned", n, cordoned)
		}
		if err := podsRunning(t, kc, 6, 6); err != nil {
			t.Fatalf("a pod protected by the PDB went: %v", err)
		}
		// Then one at a time: each eviction waits for the replacement to run.
		mustKubectl(t, kc, "patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":5}}`)
		eventually(t, 90*time.Second, "one node left with all 6 pods Running on it", func() error {
			nodes := poolNodes(t, kc)
			if len(nodes) != 1 {
				return errorf("nodes %v", nodes)
			}
			for name := range nodes {
				return podsRunning(t, kc, 6, 6, name)
			}
			return nil
		})
		t.Logf("scaled 3 → 1 in %.1fs", time.Since(start).Seconds())
		mustKubectl(t, kc, "delete", "pdb", "web")
	})

	t.Run("scaling to zero", func(t *testing.T) {
		mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "s", "--replicas", "0")
		eventually(t, time.Minute, "no nodes", func() error {
			if n := poolNodes(t, kc); len(n) != 0 {
				return errorf("nodes %v", n)
			}
			return nil
		})
		eventually(t, 30*time.Second, "pods Pending", func() error {
			return podsRunning(t, kc, 6, 0)
		})
		if !regexpMatch(hs.must("get", "nodepools"), `clusters\s+s\s+s\s+0\s+0\s+0\s`) {
			t.Error("get nodepools does not show 0 nodes")
		}
		// Nobody is to join a pool of zero: no token, no agent.
		eventually(t, 30*time.Second, "the pool's tokens and agent gone", func() error {
			if secrets := mustKubectl(t, kc, "-n", "kube-system", "get", "secrets", "-l", "hypershift.dev/nodepool=s", "-o", "name"); secrets != "" {
				return errorf("bootstrap tokens of a pool scaled to 0: %s", secrets)
			}
			if pids := pidsUnder(t, filepath.Join(hs.dataDir, "nodes", "clusters-s")+"/"); len(pids) > 0 {
				return errorf("agent of a pool scaled to 0 still running: %v", pids)
			}
			return nil
		})
	})

	t.Run("a pool of a missing cluster says so", func(t *testing.T) {
		hs.must("create", "nodepool", "--cluster-name", "nope", "--name", "orphan", "--replicas", "2")
		eventually(t, 30*time.Second, "a condition naming the missing cluster", func() error {
			msg := mustKubectl(t, mgmt, "-n", "clusters", "get", "nodepool", "orphan", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
			if !strings.Contains(msg, "HostedCluster clusters/nope not found") {
				return errorf("Ready message %q", msg)
			}
			return nil
		})
		mustKubectl(t, mgmt, "-n", "clusters", "delete", "nodepool", "orphan", "--timeout", "30s")
	})

	t.Run("deleting a pool removes its nodes and agent", func(t *testing.T) {
		mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "s", "--replicas", "2")
		eventually(t, time.Minute, "2 nodes running the 6 pods", func() error { return podsRunning(t, kc, 6, 6) })
		agentDir := filepath.Join(hs.dataDir, "nodes", "clusters-s")
		if len(pidsUnder(t, agentDir+"/")) != 1 {
			t.Errorf("want one agent process for the pool, got %v", pidsUnder(t, agentDir+"/"))
		}
		mustKubectl(t, mgmt, "-n", "clusters", "delete", "nodepool", "s", "--timeout", "90s")
		if n := poolNodes(t, kc); len(n) != 0 {
			t.Errorf("nodes left after the pool was deleted: %v", n)
		}
		if left := pidsUnder(t, agentDir+"/"); len(left) > 0 {
			t.Errorf("agent left running: %v", left)
		}
		if _, err := os.Stat(agentDir); !os.IsNotExist(err) {
			t.Errorf("agent directory left: %v", err)
		}
		if secrets := mustKubectl(t, kc, "-n", "kube-system", "get", "secrets", "-l", "hypershift.dev/nodepool=s", "-o", "name"); secrets != "" {
			t.Errorf("bootstrap tokens left: %s", secrets)
		}
	})

	t.Run("an autoscaled pool grows for pods that do not fit", func(t *testing.T) {
		hs.must("create", "nodepool", "--cluster-name", "s", "--name", "auto", "--autoscaling-min", "1", "--autoscaling-max", "3")
		// A bound on liveness: in a full run on a slow day one simulated
		// pod was still Pending after a minute.
		eventually(t, 3*time.Minute, "one node (the minimum) running the 6 pending web pods", func() error { return podsRunning(t, kc, 6, 6) })
		manifest := filepath.Join(hs.dataDir, "big.yaml")
		writeFile(t, manifest, `apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 3
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers:
      - {name: c, image: registry.invalid/pause:1, resources: {requests: {cpu: "5"}}}
`)
		mustKubectl(t, kc, "apply", "-f", manifest)
		// 5 of a node's 8 CPUs each: one per node, so two more nodes.
		eventually(t, 90*time.Second, "3 nodes running all 9 pods", func() error {
			if n := poolNodes(t, kc); len(n) != 3 {
				return errorf("nodes %v", n)
			}
			return podsRunning(t, kc, 9, 9)
		})
		if list := hs.must("get", "nodepools"); !regexpMatch(list, `clusters\s+auto\s+s\s+1-3\s+3\s+3\s`) {
			t.Errorf("get nodepools:\n%s", list)
		}
	})

	if failed, total := probe(); failed > 0 {
		t.Errorf("the hosted API failed %d of %d probes during the test", failed, total)
	} else {
		t.Logf("the hosted API answered all %d probes", total)
	}
}

type poolNode struct {
	ready            bool
	version, podCIDR string
}

// poolNodes lists the hosted cluster's nodes.
func poolNodes(t *testing.T, kc string) map[string]poolNode {
	t.Helper()
	out := mustKubectl(t, kc, "get", "nodes", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion} {.spec.podCIDR}{"\n"}{end}`)
	nodes := map[string]poolNode{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		n := poolNode{ready: f[1] == "True", version: f[2]}
		if len(f) > 3 {
			n.podCIDR = f[3]
		}
		nodes[f[0]] = n
	}
	return nodes
}

// wantReadyNodes is nil when the cluster of kc has want Ready nodes.
func wantReadyNodes(t *testing.T, kc string, want int) error {
	t.Helper()
	ready := 0
	for _, n := range poolNodes(t, kc) {
		if n.ready {
			ready++
		}
	}
	if ready != want {
		return errorf("%d Ready nodes, want %d", ready, want)
	}
	return nil
}

type poolPod struct{ name, phase, node, ip string }

func listPods(t *testing.T, kc string) []poolPod {
	t.Helper()
	out := mustKubectl(t, kc, "get", "pods", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName} {.status.podIP}{"\n"}{end}`)
	var list []poolPod
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := append(strings.Fields(line), "", "", "")
		if f[0] != "" {
			list = append(list, poolPod{name: f[0], phase: f[1], node: f[2], ip: f[3]})
		}
	}
	return list
}

// podsRunning checks that there are total pods, running of them Running
// (on the given nodes, if any) and the others Pending.
func podsRunning(t *testing.T, kc string, total, running int, onNodes ...string) error {
	t.Helper()
	list := listPods(t, kc)
	var phases []string
	r := 0
	for _, p := range list {
		phases = append(phases, p.phase+"@"+p.node)
		switch {
		case p.phase == "Running" && (len(onNodes) == 0 || onNodes[0] == p.node):
			r++
		case p.phase == "Running", p.phase == "Pending":
		default:
			return errorf("pod %s is %s", p.name, p.phase)
		}
	}
	sort.Strings(phases)
	if len(list) != total || r != running {
		return errorf("%d pods, %d Running (want %d, %d): %v", len(list), r, total, running, phases)
	}
	return nil
}

// startAPIProbe asks the hosted API server's /readyz every 250 ms until the
// returned function is called; that function reports failures and probes.
func startAPIProbe(t *testing.T, kc string) func() (failed, total int) {
	t.Helper()
	cfg := restConfig(t, kc)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client.Timeout = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var failed, total int
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
			resp, err := client.Do(req)
			ok := err == nil && resp.StatusCode == http.StatusOK
			if resp != nil {
				resp.Body.Close()
			}
			if ctx.Err() != nil {
				return
			}
			mu.Lock()
			total++
			if !ok {
				failed++
				fmt.Fprintf(os.Stderr, "hosted API probe failed: %v\n", err)
			}
			mu.Unlock()
		}
	})
	stop := func() (int, int) {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return failed, total
	}
	t.Cleanup(func() { stop() })
	return stop
}
