package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubeRuntimeUID is the user and group the kube runtime's pods run as:
// the volumes the test makes for etcd belong to it.
const kubeRuntimeUID = 65532

// TestKubeRuntime runs control planes as pods on a real Kubernetes cluster
// made of our own parts: a hosted cluster with this host joined as a real
// node is the management cluster of `hypershift install`. A cluster
// created in it is published on a node port and used with stock kubectl
// through the node's address; its API server's and etcd's pods are
// deleted (the API comes back, the data is kept), the operator's pods are
// deleted while the hosted API is polled (it never stops), it is backed
// up, destroyed and restored (kubeRuntimeBackupRestore), and destroying
// it leaves nothing of it in the management cluster. While its CAs rotate
// and its short leaves run out, a cluster of the older release and a
// cluster migrated to the embedded plane and back run beside it.
func TestKubeRuntime(t *testing.T) {
	// Quiet only in the steps that assert a bound on time (quietNow).
	wholeHost(t)
	requireRealNode(t)
	hs := upCLI(t)
	joinArgs := joinCommandArgs(t, hs.must("create", "cluster", "none", "--name", "mgmt", "--wait", "--timeout", "3m"))
	mgmt := hs.adminKubeconfig("mgmt")

	nodeDir := filepath.Join(shortTempDir(t), "node")
	resetWhenDone(t, hs, nodeDir)
	t.Cleanup(func() { dumpKubeRuntime(t, mgmt) })
	node := joinNode(t, hs, joinArgs, "--node-dir", nodeDir)
	loadMachineImage(t, hs, nodeDir)

	// The management cluster has no storage provisioner: the test makes
	// the volume etcd's claim binds to, of a class the cluster is told to
	// use (a class binds claims and volumes by name, provisioner or not).
	volumes := shortTempDir(t)
	const class = "hypershift-e2e-static"
	makeHostPathVolume(t, mgmt, "inner-etcd-0", class, filepath.Join(volumes, "etcd-0"), "inner")

	// The node's kubelet keeps its root directory in the node directory:
	// machine pods get their hot-plug directories there (docs/volumes.md).
	kubeletDir, err := filepath.EvalSymlinks(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	kubeletDir = filepath.Join(kubeletDir, "kubelet")
	start := time.Now()
	hs.must("--kubeconfig", mgmt, "install", "--kubelet-dir", kubeletDir, "--timeout", "3m")
	t.Logf("install → operator available: %.1fs", time.Since(start).Seconds())

	start = time.Now()
	hs.must("--kubeconfig", mgmt, "create", "cluster", "none", "--name", "inner",
		"--api-server-publishing", "NodePort", "--api-server-address", node.ip.String(),
		"--etcd-storage-class", class, "--etcd-storage-size", "1Gi", "--wait", "--timeout", "5m")
	t.Logf("create → Available on the kube runtime: %.1fs", time.Since(start).Seconds())
	inner := filepath.Join(hs.dataDir, "inner.kubeconfig")
	hs.must("--kubeconfig", mgmt, "create", "kubeconfig", "--name", "inner", "-o", inner)
	server := strings.TrimSpace(mustKubectl(t, inner, "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"))
	if !strings.HasPrefix(server, "https://"+node.ip.String()+":") {
		t.Fatalf("inner's kubeconfig names %s, want the node's address %s and a node port", server, node.ip)
	}
	mustKubectl(t, inner, "create", "configmap", "kept", "--from-literal=k=v")

	const ns = "clusters-inner"
	t.Run("the API server's pod is deleted and the API comes back", func(t *testing.T) {
		deletePods(t, mgmt, ns, "kube-apiserver")
		eventually(t, 3*time.Minute, "inner's API to answer again", func() error {
			_, err := kubectl(t, inner, "get", "configmap", "kept")
			return err
		})
	})
	t.Run("etcd's pod is deleted and the data is kept", func(t *testing.T) {
		deletePods(t, mgmt, ns, "etcd")
		eventually(t, 3*time.Minute, "configmap kept to be read back", func() error {
			out, err := kubectl(t, inner, "get", "configmap", "kept", "-o", "jsonpath={.data.k}")
			if err != nil || out != "v" {
				return fmt.Errorf("got %q, %w", out, err)
			}
			return nil
		})
	})
	t.Run("dump cluster reads the control plane's pods and their logs", func(t *testing.T) {
		hs := hs.in(t)
		// The dump reads the hosted API too.
		waitSteadyAfterEtcdRestart(t, mgmt, inner, ns)
		dump := filepath.Join(t.TempDir(), "dump")
		r := hs.run("--kubeconfig", mgmt, "dump", "cluster", "inner", "-o", dump)
		if r.err != nil {
			t.Fatalf("dump cluster: %v\n%s", r.err, r.stderr)
		}
		if r.stderr != "" {
			t.Logf("dump cluster: %s", r.stderr)
		}
		for _, f := range []string{"summary.txt", "management/pods.yaml", "management/statefulsets.yaml", "management/deployments.yaml", "hosted/nodes.yaml"} {
			if _, err := os.Stat(filepath.Join(dump, f)); err != nil {
				t.Errorf("dump lacks %s: %v", f, err)
			}
		}
		logs, _ := filepath.Glob(filepath.Join(dump, "components", "logs", "kube-apiserver-*", "kube-apiserver.log"))
		if len(logs) == 0 {
			t.Errorf("dump has no kube-apiserver container log")
		}
		if dirContains(t, dump, "PRIVATE KEY") {
			t.Error("the dump holds a private key")
		}
	})
	t.Run("the operator's pods are deleted and the hosted API never stops", func(t *testing.T) {
		quietNow(t)
		waitSteadyAfterEtcdRestart(t, mgmt, inner, ns)
		poll := pollAPI(t, inner)
		deletePods(t, mgmt, "hypershift", "")
		eventually(t, 3*time.Minute, "the operator to be available again", func() error {
			out, err := kubectl(t, mgmt, "-n", "hypershift", "get", "deployment", "hypershift-operator", "-o", "jsonpath={.status.availableReplicas}")
			if err != nil || out == "" || out == "0" {
				return fmt.Errorf("available replicas %q, %w", out, err)
			}
			return nil
		})
		time.Sleep(2 * time.Second)
		if answered, failed := poll(); failed > 0 || answered == 0 {
			t.Errorf("while the operator's pods were replaced the hosted API answered %d and failed %d requests, want no failure", answered, failed)
		}
	})
	// A minute and more after Available, past the start-up work.
	logPodUsage(t, mgmt, node.name, ns)
	// The CA rotation's renewal waits minutes for its short leaves to run
	// out; once the operator is back at its usual validity, another
	// release's cluster and the migration run meanwhile, on clusters of
	// their own.
	t.Run("while inner's CAs rotate and renew", func(t *testing.T) {
		settled := make(chan struct{})
		t.Run("a CA rotation under requests reaches Done and a renewal replaces no etcd or controller pod", func(t *testing.T) {
			t.Parallel()
			kubeRuntimeCARotation(t, hs.in(t), mgmt, inner, ns, settled)
		})
		t.Run("other clusters, once the operator is settled", func(t *testing.T) {
			t.Parallel()
			select {
			case <-settled:
			case <-t.Context().Done():
				return
			}
			t.Run("a cluster of another release runs the image's release binary", func(t *testing.T) {
				hs := hs.in(t)
				// The volume's directory belongs to root, as a hostPath
				// volume made without reading docs/install.md would: etcd
				// (uid 65532) cannot write it, and describe says so with
				// etcd's own last words; once the directory is given to
				// 65532, etcd's next start succeeds. The volume is
				// pre-bound to old's claim, as every volume here is to
				// its cluster's: a class binds any claim to any volume.
				oldVolume := filepath.Join(volumes, "old-etcd-0")
				makeHostPathVolume(t, mgmt, "old-etcd-0", class, oldVolume, "old")
				if err := os.Chown(oldVolume, 0, 0); err != nil {
					t.Fatal(err)
				}
				// No publishing flags: on the kube runtime create cluster chooses a
				// NodePort at the Ready node's address, and says so.
				out := hs.must("--kubeconfig", mgmt, "create", "cluster", "none", "--name", "old", "--kubernetes-version", releaseVersion,
					"--etcd-storage-class", class, "--etcd-storage-size", "1Gi")
				if want := "publishing the API server on a NodePort at node " + node.name + "'s address " + node.ip.String(); !strings.Contains(out, want) {
					t.Errorf("create cluster without publishing flags does not say %q:\n%s", want, out)
				}
				eventually(t, 3*time.Minute, "describe cluster old to say etcd cannot write its volume", func() error {
					if desc := hs.must("--kubeconfig", mgmt, "describe", "cluster", "old"); !strings.Contains(desc, "permission denied") {
						return fmt.Errorf("describe does not say %q:\n%s", "permission denied", desc)
					}
					return nil
				})
				if err := os.Chown(oldVolume, kubeRuntimeUID, kubeRuntimeUID); err != nil {
					t.Fatal(err)
				}
				mustKubectl(t, mgmt, "-n", "clusters", "wait", "hostedcluster/old", "--for=condition=Available", "--timeout=5m")
				old := filepath.Join(hs.dataDir, "old.kubeconfig")
				hs.must("--kubeconfig", mgmt, "create", "kubeconfig", "--name", "old", "-o", old)
				if v := mustKubectl(t, old, "get", "--raw", "/version"); !strings.Contains(v, `"gitVersion": "`+releaseVersion+`"`) {
					t.Errorf("/version does not report %s:\n%s", releaseVersion, v)
				}
				pods := mustKubectl(t, mgmt, "-n", "clusters-old", "get", "pods", "-l", "hypershift.dev/component=kube-apiserver",
					"-o", `jsonpath={.items[0].metadata.annotations.hypershift\.dev/kubernetes-version} {.items[0].spec.containers[0].command}`)
				if !strings.Contains(pods, releaseVersion+" ") || !strings.Contains(pods, "/releases/"+releaseVersion+"/kubernetes") {
					t.Errorf("the API server's pod: %s, want the version annotation and the release binary as its command", pods)
				}
				// Its etcd crash-looped first: a destroy passed 3 minutes
				// on a machine twice as slow.
				hs.must("--kubeconfig", mgmt, "destroy", "cluster", "--name", "old", "--wait", "--timeout", "6m")
			})
			t.Run("migrated to the embedded plane and back under writes: no acknowledged write lost, the CAs kept, the source gone", func(t *testing.T) {
				kubeRuntimeMigrate(t, hs.in(t), mgmt, node.ip, class, volumes)
			})
		})
		t.Run("a Host pool's machines are pods of the management cluster: made, one repaired, scaled, destroyed", func(t *testing.T) {
			t.Parallel()
			select {
			case <-settled:
			case <-t.Context().Done():
				return
			}
			kubeRuntimeMachines(t, hs.in(t), mgmt, class, volumes, node.ip.String())
		})
	})
	etcdVolume := "inner-etcd-0"
	t.Run("a backup restored in etcd's pod after destroy keeps the objects and the saved kubeconfig", func(t *testing.T) {
		etcdVolume = kubeRuntimeBackupRestore(t, hs.in(t), mgmt, inner, class, volumes)
	})
	t.Run("an addon rolls out across both clusters with its pod using the connector and is deleted from both", func(t *testing.T) { kubeRuntimeAddons(t, mgmt, inner, ns) })
	t.Run("fenced in place and unfenced: etcd alone, the same Services, the saved kubeconfig works again", func(t *testing.T) {
		fenceAndLift(t, mgmt, inner)
	})
	t.Run("destroy leaves nothing of the cluster behind", func(t *testing.T) {
		hs := hs.in(t)
		hs.must("--kubeconfig", mgmt, "destroy", "cluster", "--name", "inner", "--wait", "--timeout", "3m")
		eventually(t, 2*time.Minute, "namespace "+ns+" to be gone", func() error {
			if out, err := kubectl(t, mgmt, "get", "namespace", ns); err == nil {
				return fmt.Errorf("still there:\n%s", out)
			}
			return nil
		})
		eventually(t, time.Minute, "etcd's volume to be released", func() error {
			phase := strings.TrimSpace(mustKubectl(t, mgmt, "get", "pv", etcdVolume, "-o", "jsonpath={.status.phase}"))
			if phase != "Released" {
				return fmt.Errorf("phase %s", phase)
			}
			return nil
		})
		if out := mustKubectl(t, mgmt, "get", "pvc", "-A", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("claims are left:\n%s", out)
		}
		if claim := mustKubectl(t, mgmt, "get", "pv", etcdVolume, "-o", "jsonpath={.spec.claimRef.name}"); claim != "data-etcd-0" {
			t.Errorf("the volume was bound by %q, want etcd's claim data-etcd-0", claim)
		}
	})
	t.Run("uninstall", func(t *testing.T) {
		hs := hs.in(t)
		hs.must("--kubeconfig", mgmt, "uninstall")
		if out, err := kubectl(t, mgmt, "get", "crd", "hostedclusters.hypershift.dev"); err == nil {
			t.Errorf("uninstall left the CRD:\n%s", out)
		}
	})
}

// makeHostPathVolume makes a PersistentVolume of 1Gi and storage class
// class on a directory of this host (the one node), owned by the pods'
// user, pre-bound to etcd's claim of cluster (clusters-CLUSTER/data-etcd-0):
// a class binds a claim to any of its unbound volumes, and clusters made
// side by side would otherwise take each other's. With cluster "" it is
// bound to no claim: the first of its class takes it.
func makeHostPathVolume(t *testing.T, kc, name, class, dir, cluster string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, kubeRuntimeUID, kubeRuntimeUID); err != nil {
		t.Fatal(err)
	}
	claimRef := ""
	if cluster != "" {
		claimRef = fmt.Sprintf("  claimRef:\n    namespace: clusters-%s\n    name: data-etcd-0\n", cluster)
	}
	manifest := filepath.Join(t.TempDir(), name+".yaml")
	writeFile(t, manifest, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: %s
%s  hostPath:
    path: %s
    type: Directory
`, name, class, claimRef, dir))
	mustKubectl(t, kc, "apply", "-f", manifest)
}

// deletePods deletes the pods of a component of the kube runtime (all pods
// of the namespace when component is empty) and waits until they are gone.
func deletePods(t *testing.T, kc, ns, component string) {
	t.Helper()
	args := []string{"-n", ns, "delete", "pods", "--wait=true", "--timeout=2m"}
	if component == "" {
		args = append(args, "--all")
	} else {
		args = append(args, "-l", "hypershift.dev/component="+component)
	}
	out := mustKubectl(t, kc, args...)
	if !strings.Contains(out, "deleted") {
		t.Fatalf("no pod deleted:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(out))
}

// waitSteadyAfterEtcdRestart waits until the API server's pod has been
// ready for 10 s and the hosted API, through its node port, has answered
// /readyz for longer than the pod's readiness probe takes to fail (three
// failures 5 s apart). After etcd's restart the API server's pod can still
// turn not ready, and the node port refuse connections, for a probe
// period: the failures counted while etcd was away stay counted until a
// probe succeeds, and a pod that was ready before etcd went away passes
// the first check at once.
func waitSteadyAfterEtcdRestart(t *testing.T, mgmt, hosted, ns string) {
	t.Helper()
	eventually(t, 2*time.Minute, "inner's API server pod ready for 10 s", func() error {
		return readyFor(t, mgmt, ns, "kube-apiserver", 10*time.Second)
	})
	cs := hostedClientWithTimeout(t, hosted, 2*time.Second)
	var since time.Time
	eventually(t, 2*time.Minute, "inner's /readyz to answer for 20 s in a row", func() error {
		err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(t.Context()).Error()
		switch {
		case err != nil:
			since = time.Time{}
			return err
		case since.IsZero():
			since = time.Now()
		}
		if d := time.Since(since); d < 20*time.Second {
			return fmt.Errorf("answered for %s", d.Round(time.Second))
		}
		return nil
	})
}

// readyFor says why not every pod of component in ns has been Ready for at
// least d, or nil when they have.
func readyFor(t *testing.T, kc, ns, component string, d time.Duration) error {
	t.Helper()
	out, err := kubectl(t, kc, "-n", ns, "get", "pods", "-l", "hypershift.dev/component="+component, "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\n"}{end}`)
	if err != nil {
		return err
	}
	lines := strings.Fields(strings.TrimSpace(out))
	if len(lines) == 0 || len(lines)%3 != 0 {
		return fmt.Errorf("pods of %s: %q", component, out)
	}
	for i := 0; i < len(lines); i += 3 {
		since, err := time.Parse(time.RFC3339, lines[i+2])
		if err != nil {
			return fmt.Errorf("pod %s: Ready since %q: %w", lines[i], lines[i+2], err)
		}
		if lines[i+1] != "True" || time.Since(since) < d {
			return fmt.Errorf("pod %s: Ready=%s since %s", lines[i], lines[i+1], since)
		}
	}
	return nil
}

// logPodUsage logs what the kubelet measures of each pod of a namespace
// (memory working set, CPU) next to what the pod requests, once it has
// measured every pod.
func logPodUsage(t *testing.T, kc, node, ns string) {
	t.Helper()
	type podStats struct {
		PodRef struct{ Name, Namespace string } `json:"podRef"`
		CPU    struct {
			UsageNanoCores uint64 `json:"usageNanoCores"`
		} `json:"cpu"`
		Memory struct {
			WorkingSetBytes uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	}
	pods := len(strings.Fields(mustKubectl(t, kc, "-n", ns, "get", "pods", "-o", "name")))
	var measured []podStats
	eventually(t, 2*time.Minute, "the kubelet to measure the pods of "+ns, func() error {
		var summary struct {
			Pods []podStats `json:"pods"`
		}
		raw, err := kubectl(t, kc, "get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(raw), &summary); err != nil {
			return fmt.Errorf("the kubelet's stats summary: %w", err)
		}
		measured = measured[:0]
		for _, p := range summary.Pods {
			if p.PodRef.Namespace == ns && p.Memory.WorkingSetBytes > 0 {
				measured = append(measured, p)
			}
		}
		if len(measured) < pods {
			return fmt.Errorf("%d of %d pods measured", len(measured), pods)
		}
		return nil
	})
	for _, p := range measured {
		t.Logf("pod %s: working set %d MiB, CPU %d millicores", p.PodRef.Name, p.Memory.WorkingSetBytes>>20, p.CPU.UsageNanoCores/1e6)
	}
	t.Logf("requests:\n%s", mustKubectl(t, kc, "-n", ns, "get", "pods", "-o",
		"custom-columns=POD:.metadata.name,CPU:.spec.containers[*].resources.requests.cpu,MEMORY:.spec.containers[*].resources.requests.memory"))
}

// dumpKubeRuntime shows the management cluster's view when the test failed.
func dumpKubeRuntime(t *testing.T, kc string) {
	if !t.Failed() {
		return
	}
	for _, args := range [][]string{
		{"get", "nodes", "-o", "wide"},
		{"get", "pods,pvc,services,statefulsets,deployments", "-A", "-o", "wide"},
		{"get", "pv"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
		{"-n", "hypershift", "logs", "-l", "app.kubernetes.io/name=hypershift-operator", "--tail=60", "--prefix"},
		{"-n", "clusters-inner", "logs", "-l", "hypershift.dev/component", "--all-containers", "--tail=20", "--prefix"},
		{"get", "hostedclusters,hostedcontrolplanes", "-A", "-o", "yaml"},
	} {
		out, _ := kubectl(t, kc, args...)
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), lastLines(out, 60))
	}
}
