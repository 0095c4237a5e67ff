package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"hypershift.dev/internal/version"
)

// oldNodeVersion is the version the pools start at: a simulated node can
// report any version, and a kubelet one minor behind its API server is
// within the skew policy.
const oldNodeVersion = "v1.36.3"

// TestNodePoolUpgrade upgrades two pools of three simulated nodes, each
// running a Deployment of 6 replicas behind a PodDisruptionBudget, from
// v1.36.3 to the control plane's version: one with Replace (new nodes,
// the old ones drained and removed), one InPlace with maxUnavailable 1
// (the same nodes drained, restarted at the new version, uncordoned). While
// the budgets allow no eviction the rollouts wait at their first drain;
// then they finish. A watcher of the hosted cluster's Nodes checks that no
// more than one node of a pool is unavailable (NotReady or cordoned) at
// any time.
func TestNodePoolUpgrade(t *testing.T) {
	ownDirAndPorts(t)
	hs := upCLI(t)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	hs.must("create", "cluster", "simulated", "--name", "u", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("u")
	target := version.KubernetesVersion

	pools := []struct{ name, upgradeType string }{{"rep", "Replace"}, {"inp", "InPlace"}}
	for _, p := range pools {
		args := []string{
			"create", "nodepool", "--cluster-name", "u", "--name", p.name, "--replicas", "3",
			"--kubernetes-version", oldNodeVersion, "--upgrade-type", p.upgradeType, "--wait", "--timeout", "3m",
		}
		if p.upgradeType == "InPlace" {
			args = append(args, "--max-unavailable", "1")
		}
		hs.must(args...)
		writeFile(t, filepath.Join(hs.dataDir, p.name+".yaml"), fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%[1]s}
spec:
  replicas: 6
  selector: {matchLabels: {app: web-%[1]s}}
  template:
    metadata: {labels: {app: web-%[1]s}}
    spec:
      nodeSelector: {node-restriction.kubernetes.io/hypershift-nodepool: %[1]s}
      containers:
      - {name: c, image: registry.invalid/pause:1}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-%[1]s}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web-%[1]s}}
`, p.name))
		mustKubectl(t, kc, "apply", "-f", filepath.Join(hs.dataDir, p.name+".yaml"))
	}

	before := map[string]map[string]bool{}
	for _, p := range pools {
		eventually(t, 2*time.Minute, p.name+": 3 nodes at "+oldNodeVersion+" running 6 pods", func() error {
			nodes := nodesOfPool(t, kc, p.name)
			if len(nodes) != 3 {
				return errorf("nodes %v", nodes)
			}
			for name, n := range nodes {
				if !n.ready || n.version != oldNodeVersion {
					return errorf("node %s: %+v", name, n)
				}
			}
			before[p.name] = map[string]bool{}
			for name := range nodes {
				before[p.name][name] = true
			}
			return podsOfApp(t, kc, "web-"+p.name, 6, nodes)
		})
		if got := poolField(t, mgmt, p.name, "{.status.version}"); got != oldNodeVersion {
			t.Errorf("pool %s: status.version %q, want %s", p.name, got, oldNodeVersion)
		}
	}
	// A pool created without a version is pinned to the control plane's.
	hs.must("create", "nodepool", "--cluster-name", "u", "--name", "pinned", "--replicas", "0")
	eventually(t, 30*time.Second, "pool pinned has spec.kubernetesVersion "+target, func() error {
		if got := poolField(t, mgmt, "pinned", "{.spec.kubernetesVersion}"); got != target {
			return errorf("spec.kubernetesVersion %q", got)
		}
		return nil
	})

	watcher := watchUnavailable(t, kc)
	// First the PodDisruptionBudgets allow no eviction: each rollout must
	// stop at its first drain, with every pod still Running.
	for _, p := range pools {
		mustKubectl(t, kc, "patch", "pdb", "web-"+p.name, "--type", "merge", "-p", `{"spec":{"maxUnavailable":0}}`)
		eventually(t, 30*time.Second, "PDB web-"+p.name+" computed", func() error {
			if got := mustKubectl(t, kc, "get", "pdb", "web-"+p.name, "-o", "jsonpath={.status.disruptionsAllowed}/{.status.observedGeneration}/{.metadata.generation}"); !strings.HasPrefix(got, "0/") || strings.Split(got, "/")[1] != strings.Split(got, "/")[2] {
				return errorf("disruptionsAllowed/observedGeneration/generation %q", got)
			}
			return nil
		})
		mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", p.name, "--type", "merge",
			"-p", `{"spec":{"kubernetesVersion":"`+target+`"}}`)
	}
	for _, p := range pools {
		eventually(t, time.Minute, p.name+": UpdatingVersion True, one node cordoned, its drain refused", func() error {
			cond := poolField(t, mgmt, p.name, `{.status.conditions[?(@.type=="UpdatingVersion")].status}: {.status.conditions[?(@.type=="UpdatingVersion")].message}`)
			if !strings.HasPrefix(cond, "True: "+p.upgradeType+" upgrade to "+target) || !strings.Contains(cond, "draining") {
				return errorf("UpdatingVersion %q", cond)
			}
			cordoned := 0
			for _, n := range nodesOfPool(t, kc, p.name) {
				if n.unschedulable {
					cordoned++
				}
			}
			if cordoned != 1 {
				return errorf("%d nodes cordoned, want 1", cordoned)
			}
			return nil
		})
		if err := podsOfApp(t, kc, "web-"+p.name, 6, nodesOfPool(t, kc, p.name)); err != nil {
			t.Errorf("a pod protected by the PDB went: %v", err)
		}
		if got := poolField(t, mgmt, p.name, "{.status.version}"); got != oldNodeVersion {
			t.Errorf("pool %s: status.version %q while its nodes are upgraded, want %s until all run %s", p.name, got, oldNodeVersion, target)
		}
	}
	start := time.Now()
	for _, p := range pools {
		mustKubectl(t, kc, "patch", "pdb", "web-"+p.name, "--type", "merge", "-p", `{"spec":{"maxUnavailable":1}}`)
	}
	for _, p := range pools {
		t.Run(p.upgradeType, func(t *testing.T) {
			eventually(t, 5*time.Minute, p.name+": every node at "+target+", UpdatingVersion False", func() error {
				cond := poolField(t, mgmt, p.name, `{.status.conditions[?(@.type=="UpdatingVersion")].status}/{.status.conditions[?(@.type=="UpdatingVersion")].reason}/{.status.conditions[?(@.type=="UpdatingVersion")].observedGeneration}/{.metadata.generation}/{.status.version}`)
				f := strings.Split(cond, "/")
				if len(f) != 5 || f[0] != "False" || f[1] != "AsExpected" || f[2] != f[3] || f[4] != target {
					return errorf("UpdatingVersion status/reason/observedGeneration, generation, status.version: %s", cond)
				}
				nodes := nodesOfPool(t, kc, p.name)
				if len(nodes) != 3 {
					return errorf("nodes %v", nodes)
				}
				for name, n := range nodes {
					if !n.ready || n.unschedulable || n.version != target {
						return errorf("node %s: %+v", name, n)
					}
				}
				return podsOfApp(t, kc, "web-"+p.name, 6, nodes)
			})
			t.Logf("%s: pool at %s %.1fs after the PDB allowed evictions", p.upgradeType, target, time.Since(start).Seconds())
			nodes := nodesOfPool(t, kc, p.name)
			for name := range nodes {
				switch {
				case p.upgradeType == "Replace" && before[p.name][name]:
					t.Errorf("Replace kept node %s: want only new nodes", name)
				case p.upgradeType == "InPlace" && !before[p.name][name]:
					t.Errorf("InPlace made a new node %s: want the same nodes %v", name, before[p.name])
				}
			}
		})
	}
	t.Run("a pool newer than its control plane is not rolled", func(t *testing.T) {
		// The skew admission policy refuses this where it is installed; a
		// pool stored before it existed is held by the controller.
		out, err := kubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "pinned", "--type", "merge", "-p", `{"spec":{"kubernetesVersion":"v1.38.0"}}`)
		if err != nil {
			if !strings.Contains(out, "spec.kubernetesVersion") {
				t.Fatalf("refused without naming the field: %s", out)
			}
			return
		}
		eventually(t, 30*time.Second, "UpdatingVersion False, reason UnsupportedVersionSkew", func() error {
			cond := poolField(t, mgmt, "pinned", `{.status.conditions[?(@.type=="UpdatingVersion")].status}/{.status.conditions[?(@.type=="UpdatingVersion")].reason}: {.status.conditions[?(@.type=="UpdatingVersion")].message}`)
			if !strings.HasPrefix(cond, "False/UnsupportedVersionSkew: spec.kubernetesVersion v1.38.0 is newer than the control plane's "+target) {
				return errorf("UpdatingVersion %q", cond)
			}
			return nil
		})
	})
	peak, transitions := watcher()
	for _, p := range pools {
		t.Logf("pool %s: at most %d node(s) unavailable at once, %d availability changes seen", p.name, peak[p.name], transitions[p.name])
		if peak[p.name] > 1 {
			t.Errorf("pool %s: %d nodes unavailable at once, want at most 1", p.name, peak[p.name])
		}
		if transitions[p.name] == 0 {
			t.Errorf("pool %s: the watcher saw no node become unavailable: it watched nothing", p.name)
		}
	}
}

type upgradeNode struct {
	ready, unschedulable bool
	version              string
}

// nodesOfPool lists the Nodes a pool's agent registered.
func nodesOfPool(t *testing.T, kc, pool string) map[string]upgradeNode {
	t.Helper()
	out := mustKubectl(t, kc, "get", "nodes", "-l", "hypershift.dev/nodepool="+pool, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion} {.spec.unschedulable}{"\n"}{end}`)
	nodes := map[string]upgradeNode{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := append(strings.Fields(line), "", "", "")
		if f[0] != "" {
			nodes[f[0]] = upgradeNode{ready: f[1] == "True", version: f[2], unschedulable: f[3] == "true"}
		}
	}
	return nodes
}

// podsOfApp checks that the app has want pods, all Running on the given
// nodes.
func podsOfApp(t *testing.T, kc, app string, want int, nodes map[string]upgradeNode) error {
	t.Helper()
	out := mustKubectl(t, kc, "get", "pods", "-l", "app="+app, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName}{"\n"}{end}`)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := append(strings.Fields(line), "", "")
		if f[0] == "" {
			continue
		}
		n++
		if _, ok := nodes[f[2]]; f[1] != "Running" || !ok {
			return errorf("pod %s is %s on %q, want Running on one of %d nodes", f[0], f[1], f[2], len(nodes))
		}
	}
	if n != want {
		return errorf("%d pods of %s, want %d", n, app, want)
	}
	return nil
}

func poolField(t *testing.T, mgmt, pool, jsonpath string) string {
	t.Helper()
	return mustKubectl(t, mgmt, "-n", "clusters", "get", "nodepool", pool, "-o", "jsonpath="+jsonpath)
}

// watchUnavailable watches the hosted cluster's Nodes and tracks, per pool
// (label hypershift.dev/nodepool), how many are unavailable — NotReady
// (or not reporting yet) or cordoned — at once. The returned function stops
// the watch and reports the peak per pool and how many times a node became
// unavailable.
func watchUnavailable(t *testing.T, kc string) func() (peak, transitions map[string]int) {
	t.Helper()
	kube := hostedClientWithTimeout(t, kc, 0)
	var mu sync.Mutex
	unavailable := map[string]map[string]bool{} // pool → node → unavailable
	peak, transitions := map[string]int{}, map[string]int{}
	record := func(node *corev1.Node, gone bool) {
		pool := node.Labels["hypershift.dev/nodepool"]
		if pool == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if unavailable[pool] == nil {
			unavailable[pool] = map[string]bool{}
		}
		was := unavailable[pool][node.Name]
		now := !gone && (node.Spec.Unschedulable || !nodeIsReady(node))
		if now && !was {
			transitions[pool]++
		}
		if now {
			unavailable[pool][node.Name] = true
		} else {
			delete(unavailable[pool], node.Name)
		}
		peak[pool] = max(peak[pool], len(unavailable[pool]))
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record(obj.(*corev1.Node), false) },
		UpdateFunc: func(_, obj any) { record(obj.(*corev1.Node), false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				record(n, true)
			}
		},
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("node watch did not sync")
	}
	// The initial list is not a change: only count what happens from now.
	mu.Lock()
	clear(transitions)
	clear(peak)
	for pool, nodes := range unavailable {
		peak[pool] = len(nodes)
	}
	mu.Unlock()
	return func() (map[string]int, map[string]int) {
		cancel()
		factory.Shutdown()
		mu.Lock()
		defer mu.Unlock()
		return peak, transitions
	}
}

func nodeIsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
