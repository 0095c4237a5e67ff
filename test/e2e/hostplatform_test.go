package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/version"
)

// A hosted cluster of platform Host gets its nodes from Cluster API: each
// NodePool becomes a MachineDeployment whose machines the HostMachine
// provider makes on this host, each joining with its JoinConfig's
// userdata. It checks, on three machines:
//
//   - each is a Ready node named for its machine, at the machine's
//     address, with provider ID hypershift-host://NAME; `get machines`
//     and `machine list` show them;
//   - a Deployment spreads over the nodes; each pod answers `kubectl logs`
//     through its node's kubelet; pods reach each other across nodes; from
//     every node a Service (every pod behind it answering) and cluster DNS
//     answer;
//   - a node that reports another node's address in its status gets no
//     serving certificate for it (one for its own is approved), and a
//     Konnectivity agent run on it with its token, declaring the other
//     node's address, is refused by the server, while the real agents
//     still carry `kubectl logs` to the other node;
//   - side by side, each on machines of its own: a machine killed from
//     outside is replaced and the pool scales 3 → 1 → 2; a Replace
//     upgrade of another pool waits for a PodDisruptionBudget; pending
//     pods make the autoscaler add a machine to a third;
//   - a machine made by hand (`machine create --userdata`, a script that
//     joins nothing) gets an address of the network, runs its userdata
//     with its provider ID, is listed, runs `machine exec` and goes with
//     `machine delete`;
//   - destroying the cluster leaves the host as it was (readHost:
//     iptables, links, addresses, routes, kernel parameters, cgroups, host
//     directories), no link on the machine bridge, and the network goes
//     with `machine network --delete`.
//
// Not run here: a hand-made machine whose userdata is `create
// join-command`'s output (it would join a None pool). That is the same
// `hypershift join` in a machine as the JoinConfig userdata of these
// machines; TestNoneNodes runs `create join-command`'s line, and
// internal/nodes/machine's TestMachinesAreApart makes machines with
// userdata (their addresses, namespaces and deletion).
//
// A wholeHost test: its kubelets set kernel-wide parameters and add top
// cgroups, which the host comparisons of the other such tests read.
func TestHostPlatform(t *testing.T) {
	wholeHost(t)
	requireRealNode(t)
	before := readHost(t)
	pre := newCLI(t) // machine commands use no data dir
	machinesDir := filepath.Join(shortTempDir(t), "machines")
	machine := func(args ...string) string {
		t.Helper()
		return pre.must(append([]string{"machine", "--machines-dir", machinesDir}, args...)...)
	}
	cidr := pickMachineNetwork(t)
	out := machine("network", "--cidr", cidr)
	m := regexp.MustCompile(`on bridge (\S+);`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("machine network does not say its bridge:\n%s", out)
	}
	bridge := m[1]
	// Registered before the management plane: it runs after its `down`,
	// as a last resort for machines the operator did not delete.
	t.Cleanup(func() {
		for _, name := range machineNames(t, machinesDir) {
			t.Errorf("machine %s left after the test", name)
			pre.run("machine", "--machines-dir", machinesDir, "delete", name)
		}
		if r := pre.run("machine", "--machines-dir", machinesDir, "network", "--delete"); r.err != nil {
			t.Errorf("machine network --delete: %v\n%s", r.err, r.stderr)
		}
		if linkExists(bridge) {
			t.Errorf("machine bridge %s left on the host", bridge)
		}
	})

	// The branches worked side by side below hold up to 9 machines at
	// once, the hand-made one included: over the default bound of 4 a CPU.
	hs := upCLI(t, "--machines-dir", machinesDir, "--max-machines", "12")
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	start := time.Now()
	hs.must("create", "cluster", "host", "--name", "hp", "--node-pool-replicas", "3", "--wait", "--timeout", "5m")
	t.Logf("create cluster host with 3 machines → pool Ready: %.1fs", time.Since(start).Seconds())
	kc := hs.adminKubeconfig("hp")
	t.Cleanup(func() { dumpOnFailure(t, hs, "hp", kc, "") })

	nodes := readyHostNodes(t, kc, "hp")
	if len(nodes) != 3 {
		t.Fatalf("Ready nodes of pool hp with a hypershift-host:// provider ID: %v, want 3", nodes)
	}
	machines := hs.must("get", "machines")
	for _, n := range nodes {
		if !strings.Contains(machines, " "+n+" ") || !strings.Contains(machines, "hypershift-host://"+n) {
			t.Errorf("get machines does not show the machine of node %s:\n%s", n, machines)
		}
	}
	if got := machineNames(t, machinesDir); len(got) != 3 {
		t.Errorf("machines on the host: %v, want 3", got)
	}
	// Each node is at its machine's address, and `machine list` shows the
	// machine with its provider ID and the processes running in it.
	addresses := map[string]string{} // by node
	internalIPs := mustKubectl(t, kc, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}`)
	list := machine("list")
	for _, n := range nodes {
		addresses[n] = readMachineRecord(t, machinesDir, n).Address
		if !strings.Contains(internalIPs, n+" "+addresses[n]+"\n") {
			t.Errorf("node %s is not at its machine's address %s:\n%s", n, addresses[n], internalIPs)
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(n) + `\s+` + regexp.QuoteMeta(addresses[n]) + `\s+hypershift-host://` + regexp.QuoteMeta(n) + `\s+[1-9]`).MatchString(list) {
			t.Errorf("machine list does not show %s at %s with its provider ID and processes:\n%s", n, addresses[n], list)
		}
	}

	pods := map[string]poolPod{} // hello's, by node
	t.Run("a Deployment over the three nodes: pod to pod and a Service and DNS from every node", func(t *testing.T) {
		image := buildHelloImage(t)
		for _, n := range nodes {
			machine("exec", n, "--", "hypershift", "node", "load-image", image)
		}
		deployment := filepath.Join(t.TempDir(), "hello.yaml")
		writeFile(t, deployment, helloDeployment(3)+`---
apiVersion: v1
kind: Service
metadata:
  name: hello
spec:
  selector: {app: hello}
  ports:
  - port: 8080
`)
		mustKubectl(t, kc, "apply", "-f", deployment)
		mustKubectl(t, kc, "rollout", "status", "deployment/hello", "--timeout=120s")
		for _, p := range listPods(t, kc) {
			if strings.HasPrefix(p.name, "hello-") && p.phase == "Running" {
				pods[p.node] = p
			}
		}
		if len(pods) != 3 {
			t.Fatalf("hello pods by node %v, want one on each of %v", pods, nodes)
		}
		for _, from := range nodes {
			for _, to := range nodes {
				if from == to {
					continue
				}
				eventually(t, time.Minute, pods[from].name+" reaches "+pods[to].name, func() error {
					out, err := kubectl(t, kc, "exec", pods[from].name, "--", "/hello", "get", "http://"+pods[to].ip+":8080/")
					if err != nil || !strings.Contains(out, "hello from "+pods[to].name) {
						return errorf("%s", outcome(out, err))
					}
					return nil
				})
			}
			// Through the Service, every pod answers, those on the other
			// nodes too (20 requests a try, each on a new connection).
			seen := map[string]bool{}
			eventually(t, time.Minute, "the Service's three pods answer "+pods[from].name, func() error {
				out, err := kubectl(t, kc, "exec", pods[from].name, "--", "/hello", "get", "-n", "20", "http://hello:8080/")
				for _, line := range strings.Split(out, "\n") {
					if name, ok := strings.CutPrefix(line, "HTTP 200 hello from "); ok {
						seen[name] = true
					}
				}
				for _, p := range pods {
					if err != nil || !seen[p.name] {
						return errorf("seen %v; last %s", seen, outcome(out, err))
					}
				}
				return nil
			})
			url := "http://hello.default.svc.cluster.local:8080/"
			eventually(t, time.Minute, pods[from].name+" gets "+url, func() error {
				out, err := kubectl(t, kc, "exec", pods[from].name, "--", "/hello", "get", url)
				if err != nil || !strings.Contains(out, "hello from hello-") {
					return errorf("%s", outcome(out, err))
				}
				return nil
			})
		}
	})

	t.Run("a pod on each machine answers kubectl logs through its kubelet", func(t *testing.T) {
		for _, n := range nodes {
			if out, err := kubectl(t, kc, "logs", pods[n].name); err != nil || !strings.Contains(out, "hello from "+pods[n].name) {
				t.Errorf("kubectl logs %s (on %s): %s", pods[n].name, n, outcome(out, err))
			}
		}
	})

	// nodes[1] plays the impostor of nodes[2]'s address; nodes[0] is the
	// machine killed next.
	impostor, other := nodes[1], nodes[2]
	t.Run("a node gets no serving certificate for another node's address it claims", func(t *testing.T) {
		nodeAsMachine(t, kc, machinesDir, impostor, addresses[other], addresses[impostor])
	})

	t.Run("a node's Konnectivity agent cannot register for another node's address", func(t *testing.T) {
		serverLog := filepath.Join(hs.dataDir, "clusters", "clusters-hp", "konnectivity-server", "konnectivity-server.log")
		agentAsMachine(t, pre, kc, machinesDir, serverLog, impostor, addresses[other])
		// The real agents still carry the API server's traffic to the other node.
		if out, err := kubectl(t, kc, "logs", pods[other].name); err != nil || !strings.Contains(out, "hello from "+pods[other].name) {
			t.Errorf("kubectl logs %s (on %s) after the impostor: %s", pods[other].name, other, outcome(out, err))
		}
	})

	// The pools and the hand-made machine are apart (their own machines,
	// nodes and pods): they are worked on side by side, each branch
	// counting only its own. Their machines boot at the same time, so the
	// waits below are bounds on liveness for machines booting together.
	t.Run("side by side", func(t *testing.T) {
		t.Run("pool hp: a machine killed from outside is replaced, then scale 3 → 1 → 2", func(t *testing.T) {
			t.Parallel()
			t.Run("a machine killed from outside is replaced", func(t *testing.T) {
				mustKubectl(t, mgmt, "-n", "clusters", "annotate", "nodepool", "hp", "hypershift.dev/machine-health-check-timeout=30s")
				mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "hp", "--type=merge", "-p", `{"spec":{"management":{"autoRepair":true}}}`)
				victim := nodes[0]
				start := time.Now()
				killed := killMachine(t, machinesDir, victim)
				t.Logf("killed the %d processes of machine %s", killed, victim)
				// 141 s in a run where every test took twice its time: a bound on
				// liveness, not on speed.
				eventually(t, 10*time.Minute, "machine "+victim+" replaced by a new Ready node", func() error {
					now := readyHostNodes(t, kc, "hp")
					if len(now) != 3 || slices.Contains(now, victim) {
						return errorf("Ready nodes %v", now)
					}
					if m := poolMachines(t, machinesDir, "hp"); len(m) != 3 || slices.Contains(m, victim) {
						return errorf("machines on the host %v", m)
					}
					return nil
				})
				t.Logf("machine killed → replaced and its node Ready: %.1fs", time.Since(start).Seconds())
				// A node of this pool slow to become Ready while the other
				// branches boot machines must not be taken for a broken one
				// from here on.
				mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "hp", "--type=merge", "-p", `{"spec":{"management":{"autoRepair":false}}}`)
			})

			t.Run("scale 3 → 1 → 2", func(t *testing.T) {
				for _, n := range []int{1, 2} {
					start := time.Now()
					mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "hp", "--replicas", fmt.Sprint(n))
					eventually(t, 5*time.Minute, fmt.Sprintf("%d nodes and machines", n), func() error {
						if got := readyHostNodes(t, kc, "hp"); len(got) != n {
							return errorf("nodes %v", got)
						}
						if m := poolMachines(t, machinesDir, "hp"); len(m) != n {
							return errorf("machines on the host %v", m)
						}
						return nil
					})
					t.Logf("scale to %d: %.1fs", n, time.Since(start).Seconds())
				}
				mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "hp", "--replicas", "1")
			})
		})

		t.Run("a Replace upgrade waits for a PodDisruptionBudget", func(t *testing.T) {
			t.Parallel()
			hs := hs.in(t)
			hs.must("create", "nodepool", "--cluster-name", "hp", "--name", "up", "--platform", "host",
				"--replicas", "1", "--kubernetes-version", "v1.36.3")
			waitPoolReady(t, mgmt, "up", 1)
			web := filepath.Join(t.TempDir(), "web.yaml")
			writeFile(t, web, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      nodeSelector: {`+bootstrap.BindingLabel+`: up}
      containers:
      - name: pause
        image: `+join.PauseImage+`
        imagePullPolicy: Never
`)
			mustKubectl(t, kc, "apply", "-f", web)
			mustKubectl(t, kc, "rollout", "status", "deployment/web", "--timeout=120s")
			mustKubectl(t, kc, "create", "poddisruptionbudget", "web", "--selector", "app=web", "--min-available", "1")
			old := readyHostNodes(t, kc, "up")
			start := time.Now()
			mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "up", "--type=merge", "-p", `{"spec":{"kubernetesVersion":"`+version.KubernetesVersion+`"}}`)
			// A new machine joins; the old one cannot be drained.
			eventually(t, 5*time.Minute, "a node of the new version beside the old one", func() error {
				if v := poolVersions(t, kc, "up"); v[version.KubernetesVersion] != 1 || v["v1.36.3"] != 1 {
					return errorf("kubelet versions of pool up %v", v)
				}
				return nil
			})
			time.Sleep(15 * time.Second)
			if v := poolVersions(t, kc, "up"); v["v1.36.3"] != 1 {
				t.Fatalf("the old node went while the PodDisruptionBudget allows no eviction: versions %v", v)
			}
			if got := mustKubectl(t, kc, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"); got != "1" {
				t.Errorf("web available replicas %s while blocked, want 1", got)
			}
			mustKubectl(t, kc, "patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":0}}`)
			eventually(t, 5*time.Minute, "pool up replaced by nodes of "+version.KubernetesVersion, func() error {
				v := poolVersions(t, kc, "up")
				if v[version.KubernetesVersion] != 1 || len(v) != 1 {
					return errorf("kubelet versions %v", v)
				}
				if got := mustKubectl(t, kc, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"); got != "1" {
					return errorf("web has %q available replicas", got)
				}
				return nil
			})
			for _, n := range readyHostNodes(t, kc, "up") {
				if slices.Contains(old, n) {
					t.Errorf("node %s of the old version is still there", n)
				}
			}
			t.Logf("Replace upgrade of a machine, 15 s held by the budget: %.1fs", time.Since(start).Seconds())
			mustKubectl(t, kc, "delete", "pdb", "web")
			mustKubectl(t, kc, "delete", "deployment", "web")
			mustKubectl(t, mgmt, "-n", "clusters", "delete", "nodepool", "up", "--timeout=3m")
		})

		t.Run("pending pods make the autoscaler add a machine", func(t *testing.T) {
			t.Parallel()
			hs := hs.in(t)
			hs.must("create", "nodepool", "--cluster-name", "hp", "--name", "auto", "--platform", "host",
				"--autoscaling-min", "1", "--autoscaling-max", "2")
			waitPoolReady(t, mgmt, "auto", 1)
			// Each pod asks for more than half a machine: two need two.
			cpu := fmt.Sprintf("%dm", runtime.NumCPU()*1000*6/10)
			big := filepath.Join(t.TempDir(), "big.yaml")
			writeFile(t, big, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: big
spec:
  replicas: 2
  selector:
    matchLabels: {app: big}
  template:
    metadata:
      labels: {app: big}
    spec:
      nodeSelector: {`+bootstrap.BindingLabel+`: auto}
      containers:
      - name: pause
        image: `+join.PauseImage+`
        imagePullPolicy: Never
        resources: {requests: {cpu: "`+cpu+`"}}
`)
			start := time.Now()
			mustKubectl(t, kc, "apply", "-f", big)
			eventually(t, 6*time.Minute, "both pods running on two machines of pool auto", func() error {
				if n := readyHostNodes(t, kc, "auto"); len(n) != 2 {
					return errorf("nodes of pool auto %v", n)
				}
				if got := mustKubectl(t, kc, "get", "deployment", "big", "-o", "jsonpath={.status.availableReplicas}"); got != "2" {
					return errorf("big available replicas %q", got)
				}
				return nil
			})
			t.Logf("pending pod → autoscaled machine → pod running: %.1fs", time.Since(start).Seconds())
			if md := mustKubectl(t, mgmt, "-n", "clusters-hp", "get", "machinedeployment", "auto", "-o",
				`jsonpath={.metadata.annotations.cluster\.x-k8s\.io/cluster-api-autoscaler-node-group-max-size}`); md != "2" {
				t.Errorf("MachineDeployment auto's autoscaler max-size annotation %q, want 2", md)
			}
		})

		t.Run("a machine made by hand: machine create, list, exec, delete", func(t *testing.T) {
			t.Parallel()
			pre := pre.in(t)
			machine := func(args ...string) string {
				t.Helper()
				return pre.must(append([]string{"machine", "--machines-dir", machinesDir}, args...)...)
			}
			userdata := filepath.Join(t.TempDir(), "userdata.sh")
			writeFile(t, userdata, "set -e\necho \"userdata on $(hostname) as $HYPERSHIFT_PROVIDER_ID\"\n")
			start := time.Now()
			r := pre.run("machine", "--machines-dir", machinesDir, "create", "by-hand", "--userdata", userdata)
			t.Logf("machine create by-hand (no node): %.1fs", time.Since(start).Seconds())
			if r.err != nil {
				t.Fatalf("machine create by-hand: %v\n%s%s", r.err, r.stdout, r.stderr)
			}
			m := regexp.MustCompile(`machine by-hand \((\S+)\) created`).FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("machine create by-hand does not say its address:\n%s", r.stdout)
			}
			addr := m[1]
			if !strings.HasPrefix(addr, strings.TrimSuffix(cidr, "0/24")) || slices.Contains(slices.Collect(maps.Values(addresses)), addr) {
				t.Errorf("by-hand's address %s: want one of %s that no other machine has (%v)", addr, cidr, addresses)
			}
			if want := "userdata on by-hand as hypershift-host://by-hand"; !strings.Contains(r.stderr, want) {
				t.Errorf("machine create by-hand's userdata did not print %q:\n%s", want, r.stderr)
			}
			if list := machine("list"); !regexp.MustCompile(`(?m)^by-hand\s+` + regexp.QuoteMeta(addr) + `\s+hypershift-host://by-hand\s`).MatchString(list) {
				t.Errorf("machine list does not show by-hand at %s with its provider ID:\n%s", addr, list)
			}
			if got := strings.TrimSpace(machine("exec", "by-hand", "--", "hostname")); got != "by-hand" {
				t.Errorf("machine exec by-hand -- hostname: %q", got)
			}
			hostLink := readMachineRecord(t, machinesDir, "by-hand").HostLink
			start = time.Now()
			machine("delete", "by-hand")
			t.Logf("machine delete by-hand (no node): %.1fs", time.Since(start).Seconds())
			if list := machine("list"); strings.Contains(list, "by-hand") {
				t.Errorf("machine list after delete:\n%s", list)
			}
			if linkExists(hostLink) {
				t.Errorf("by-hand's veth %s left on the host", hostLink)
			}
		})
	})

	t.Run("destroying the cluster leaves the host as it was", func(t *testing.T) {
		start := time.Now()
		hs.must("destroy", "cluster", "--name", "hp")
		eventually(t, 3*time.Minute, "no machine left on the host", func() error {
			if m := machineNames(t, machinesDir); len(m) != 0 {
				return errorf("machines on the host %v", m)
			}
			return nil
		})
		t.Logf("destroy cluster with its machines: %.1fs", time.Since(start).Seconds())
		hs.must("down")
		if left := bridgePorts(t, bridge); len(left) > 0 {
			t.Errorf("machine links left on bridge %s: %v", bridge, left)
		}
		machine("network", "--delete")
		if linkExists(bridge) {
			t.Errorf("machine bridge %s left after network --delete", bridge)
		}
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
	})
}

// waitPoolReady waits until NodePool pool (namespace clusters) is Ready
// with n nodes.
func waitPoolReady(t *testing.T, mgmt, pool string, n int) {
	t.Helper()
	eventually(t, 6*time.Minute, "NodePool "+pool+" Ready", func() error {
		got := mustKubectl(t, mgmt, "-n", "clusters", "get", "nodepool", pool, "-o",
			`jsonpath={.status.readyReplicas} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
		if !strings.HasPrefix(got, fmt.Sprintf("%d True", n)) {
			return errorf("NodePool %s: %s", pool, got)
		}
		return nil
	})
}

// poolMachines names the machines on the host of pool: a pool's
// machines are named after its MachineDeployment, which is named after the
// pool (POOL-HASH-SUFFIX).
func poolMachines(t *testing.T, dir, pool string) []string {
	t.Helper()
	var names []string
	for _, n := range machineNames(t, dir) {
		if strings.HasPrefix(n, pool+"-") {
			names = append(names, n)
		}
	}
	return names
}

// poolVersions counts the kubelet versions of the Ready nodes of pool.
func poolVersions(t *testing.T, kc, pool string) map[string]int {
	t.Helper()
	out := mustKubectl(t, kc, "get", "nodes", "-l", bootstrap.BindingLabel+"="+pool, "-o",
		`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {.status.nodeInfo.kubeletVersion}{"\n"}{end}`)
	v := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "True" {
			v[f[1]]++
		}
	}
	return v
}

// readyHostNodes names the Ready nodes of pool whose provider ID is a
// machine of this host's.
func readyHostNodes(t *testing.T, kc, pool string) []string {
	t.Helper()
	out := mustKubectl(t, kc, "get", "nodes", "-l", bootstrap.BindingLabel+"="+pool, "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.spec.providerID}{"\n"}{end}`)
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "True" && f[2] == "hypershift-host://"+f[0] {
			names = append(names, f[0])
		}
	}
	return names
}
