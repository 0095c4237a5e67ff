package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/version"
)

// A hosted cluster of platform Host gets its nodes from Cluster API: each
// NodePool becomes a MachineDeployment whose machines the HostMachine
// provider makes on this host, each joining with its JoinConfig's
// userdata. On three machines a Deployment spreads over the nodes, its
// pods reach each other, a Service and DNS answer from every node; a
// machine killed from outside is replaced; the pool scales 3 → 1 → 2; a
// Replace upgrade waits for a PodDisruptionBudget; pending pods make the
// autoscaler add a machine; destroying the cluster leaves nothing of the
// machines on the host.
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
	machine("network", "--cidr", pickMachineNetwork(t))
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
	})

	hs := upCLI(t, "--machines-dir", machinesDir)
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

	t.Run("a Deployment over the three nodes: pod to pod and a Service and DNS from every node", func(t *testing.T) {
		image := buildHelloImage(t)
		for _, n := range nodes {
			machine("exec", n, "--", "hypershift", "node", "load-image", image)
		}
		deployment := filepath.Join(t.TempDir(), "hello.yaml")
		writeFile(t, deployment, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 3
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: hello}}}
      containers:
      - name: hello
        image: `+workloadImage+`
        imagePullPolicy: Never
---
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
		pods := map[string]poolPod{} // by node
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
			for _, url := range []string{"http://hello:8080/", "http://hello.default.svc.cluster.local:8080/"} {
				eventually(t, time.Minute, pods[from].name+" gets "+url, func() error {
					out, err := kubectl(t, kc, "exec", pods[from].name, "--", "/hello", "get", url)
					if err != nil || !strings.Contains(out, "hello from hello-") {
						return errorf("%s", outcome(out, err))
					}
					return nil
				})
			}
		}
	})

	t.Run("a machine killed from outside is replaced", func(t *testing.T) {
		mustKubectl(t, mgmt, "-n", "clusters", "annotate", "nodepool", "hp", "hypershift.dev/machine-health-check-timeout=30s")
		mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "hp", "--type=merge", "-p", `{"spec":{"management":{"autoRepair":true}}}`)
		victim := nodes[0]
		start := time.Now()
		killed := killMachine(t, machinesDir, victim)
		t.Logf("killed the %d processes of machine %s", killed, victim)
		eventually(t, 5*time.Minute, "machine "+victim+" replaced by a new Ready node", func() error {
			now := readyHostNodes(t, kc, "hp")
			if len(now) != 3 || slices.Contains(now, victim) {
				return errorf("Ready nodes %v", now)
			}
			if m := machineNames(t, machinesDir); len(m) != 3 || slices.Contains(m, victim) {
				return errorf("machines on the host %v", m)
			}
			return nil
		})
		t.Logf("machine killed → replaced and its node Ready: %.1fs", time.Since(start).Seconds())
	})

	t.Run("scale 3 → 1 → 2", func(t *testing.T) {
		for _, n := range []int{1, 2} {
			start := time.Now()
			mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "hp", "--replicas", fmt.Sprint(n))
			eventually(t, 3*time.Minute, fmt.Sprintf("%d nodes and machines", n), func() error {
				if got := readyHostNodes(t, kc, "hp"); len(got) != n {
					return errorf("nodes %v", got)
				}
				if m := machineNames(t, machinesDir); len(m) != n {
					return errorf("machines on the host %v", m)
				}
				return nil
			})
			t.Logf("scale to %d: %.1fs", n, time.Since(start).Seconds())
		}
		mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "hp", "--replicas", "1")
	})

	t.Run("a Replace upgrade waits for a PodDisruptionBudget", func(t *testing.T) {
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
		eventually(t, 3*time.Minute, "a node of the new version beside the old one", func() error {
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
		eventually(t, 4*time.Minute, "both pods running on two machines of pool auto", func() error {
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
		machine("network", "--delete")
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
	})
}

// waitPoolReady waits until NodePool pool (namespace clusters) is Ready
// with n nodes.
func waitPoolReady(t *testing.T, mgmt, pool string, n int) {
	t.Helper()
	eventually(t, 4*time.Minute, "NodePool "+pool+" Ready", func() error {
		got := mustKubectl(t, mgmt, "-n", "clusters", "get", "nodepool", pool, "-o",
			`jsonpath={.status.readyReplicas} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].message}`)
		if !strings.HasPrefix(got, fmt.Sprintf("%d True", n)) {
			return errorf("NodePool %s: %s", pool, got)
		}
		return nil
	})
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

// killMachine kills every process in the network namespace of machine
// name — as a machine whose host crashed — and says how many it killed.
func killMachine(t *testing.T, machinesDir, name string) int {
	t.Helper()
	var record struct {
		NetnsInode uint64 `json:"netnsInode"`
	}
	data, err := os.ReadFile(filepath.Join(machinesDir, name, "machine.json"))
	if err != nil || json.Unmarshal(data, &record) != nil || record.NetnsInode == 0 {
		t.Fatalf("machine %s's record: %v\n%s", name, err, data)
	}
	want := fmt.Sprintf("net:[%d]", record.NetnsInode)
	self := fmt.Sprintf("net:[%d]", hostNetns(t))
	if want == self {
		t.Fatalf("machine %s's record names the host's network namespace", name)
	}
	killed := 0
	for range 5 { // what a dying process forks is killed next round
		procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
		n := 0
		for _, p := range procs {
			if ns, err := os.Readlink(p); err == nil && ns == want {
				pid, err := strconv.Atoi(strings.Split(p, "/")[2])
				if err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
					n++
				}
			}
		}
		killed += n
		if n == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if killed == 0 {
		t.Fatalf("no process ran in machine %s", name)
	}
	return killed
}

// hostNetns is the inode of the test's own network namespace.
func hostNetns(t *testing.T) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/net", &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
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

// machineNames lists the machines of a machines directory: its
// subdirectories with a record.
func machineNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "machine.json")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}
