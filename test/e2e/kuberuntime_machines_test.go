package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// loadMachineImage writes the machine image and loads it into the
// management cluster's node, as a user pushes it where the nodes pull.
func loadMachineImage(t *testing.T, hs *cli, nodeDir string) {
	t.Helper()
	tar := filepath.Join(t.TempDir(), "machine.tar")
	start := time.Now()
	hs.must("image", "save", "--machine", "-o", tar)
	hs.must("node", "load-image", tar, "--node-dir", nodeDir)
	t.Logf("machine image written and loaded into the management cluster's node: %.1fs", time.Since(start).Seconds())
}

// kubeRuntimeMachines: a Host NodePool of a cluster on the kube runtime
// gets its machines as privileged pods of the management cluster, in the
// namespace of the cluster's machines, each a Ready node of the hosted
// cluster; a machine pod deleted from outside is replaced with no manual
// step; a guest LoadBalancer Service is served at the address the
// management cluster gives its mirror; a guest claim of a StorageClass
// mapped to the management cluster's is written on one machine and read
// back on the other, and deleting it deletes the management cluster's
// claim; the pool scales down; destroying the cluster leaves no machine
// pod, userdata Secret or machines namespace.
//
// The hosted cluster's pod and service networks are apart from the
// management cluster's: a machine's pods and its own address share the
// machine pod's network namespace (docs/machines.md).
func kubeRuntimeMachines(t *testing.T, hs *cli, mgmt, class, volumes, nodeIP string) {
	makeHostPathVolume(t, mgmt, "mach-etcd-0", class, filepath.Join(volumes, "mach-etcd-0"), "mach")
	// The guest's claims are made of the management cluster's class
	// guestVolumeClass, whose one volume the test makes (no provisioner).
	makeHostPathVolume(t, mgmt, "mach-guest-0", guestVolumeClass, filepath.Join(volumes, "mach-guest-0"), "")
	start := time.Now()
	hs.must("--kubeconfig", mgmt, "create", "cluster", "host", "--name", "mach",
		"--cluster-cidr", "10.220.0.0/16", "--service-cidr", "172.29.0.0/16",
		"--etcd-storage-class", class, "--etcd-storage-size", "1Gi",
		"--storage-class-mapping", "standard="+guestVolumeClass,
		"--node-pool-replicas", "2", "--wait", "--timeout", "6m")
	t.Logf("create cluster host with 2 machines on the kube runtime → pool Ready: %.1fs", time.Since(start).Seconds())
	kc := filepath.Join(hs.dataDir, "mach.kubeconfig")
	hs.must("--kubeconfig", mgmt, "create", "kubeconfig", "--name", "mach", "-o", kc)
	const machines = "clusters-mach-machines"
	destroyed := false
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := kubectl(t, mgmt, "-n", machines, "get", "pods", "-o", "wide")
			t.Logf("machine pods:\n%s", out)
			out, _ = kubectl(t, mgmt, "-n", "clusters-mach", "get", "hostmachines,machines.cluster.x-k8s.io", "-o", "wide")
			t.Logf("HostMachines and Machines:\n%s", out)
		}
		if !destroyed {
			hs.run("--kubeconfig", mgmt, "destroy", "cluster", "--name", "mach", "--wait", "--timeout", "4m")
		}
	})

	nodes := readyHostNodes(t, kc, "mach")
	if pods := machinePods(t, mgmt, machines); len(nodes) != 2 || fmt.Sprint(pods) != fmt.Sprint(nodes) {
		t.Fatalf("Ready nodes %v, machine pods %v: want two, the same names", nodes, pods)
	}
	if got := mustKubectl(t, mgmt, "-n", machines, "get", "pod", nodes[0], "-o",
		`jsonpath={.spec.containers[0].securityContext.privileged} {.spec.containers[0].image}`); !strings.HasPrefix(got, "true hypershift.dev/hypershift-machine:") {
		t.Errorf("machine pod %s: privileged and image %q, want a privileged pod of the machine image", nodes[0], got)
	}

	t.Run("a guest LoadBalancer Service answers at its mirror's address", func(t *testing.T) {
		kubeRuntimeLoadBalancer(t, mgmt, kc, machines, nodes, nodeIP)
	})

	t.Run("a guest claim written on one machine is read back on the other; deleting it deletes the management cluster's", func(t *testing.T) {
		kubeRuntimeVolumes(t, mgmt, kc, machines, nodes)
	})

	t.Run("a machine pod deleted from outside is replaced", func(t *testing.T) {
		mustKubectl(t, mgmt, "-n", "clusters", "annotate", "nodepool", "mach", "hypershift.dev/machine-health-check-timeout=30s")
		mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "mach", "--type=merge", "-p", `{"spec":{"management":{"autoRepair":true}}}`)
		victim := nodes[0]
		start := time.Now()
		mustKubectl(t, mgmt, "-n", machines, "delete", "pod", victim, "--wait=false")
		// 119 s on an idle machine, 202 s beside a compile, 247 s in a
		// full run on a slow day; on a machine twice as slow it passed 5
		// minutes. A bound on liveness, not on speed (docs/performance.md
		// measures that).
		eventually(t, 15*time.Minute, "machine "+victim+" replaced by a new Ready node", func() error {
			now := readyHostNodes(t, kc, "mach")
			if len(now) != 2 || slices.Contains(now, victim) {
				return errorf("Ready nodes %v", now)
			}
			if pods := machinePods(t, mgmt, machines); len(pods) != 2 || slices.Contains(pods, victim) {
				return errorf("machine pods %v", pods)
			}
			return nil
		})
		t.Logf("machine pod deleted → replaced and its node Ready: %.1fs", time.Since(start).Seconds())
	})

	t.Run("scale 2 → 1", func(t *testing.T) {
		start := time.Now()
		mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "mach", "--replicas", "1")
		eventually(t, 3*time.Minute, "one node and one machine pod", func() error {
			nodes, pods := readyHostNodes(t, kc, "mach"), machinePods(t, mgmt, machines)
			if len(nodes) != 1 || fmt.Sprint(pods) != fmt.Sprint(nodes) {
				return errorf("nodes %v, machine pods %v", nodes, pods)
			}
			return nil
		})
		t.Logf("scale to 1: %.1fs", time.Since(start).Seconds())
	})

	t.Run("destroy leaves no machine pod, Secret or namespace", func(t *testing.T) {
		destroyed = true
		hs.must("--kubeconfig", mgmt, "destroy", "cluster", "--name", "mach", "--wait", "--timeout", "4m")
		eventually(t, 2*time.Minute, "namespace "+machines+" to be gone", func() error {
			if out, err := kubectl(t, mgmt, "get", "namespace", machines); err == nil {
				return errorf("still there:\n%s", out)
			}
			return nil
		})
		if out := mustKubectl(t, mgmt, "get", "pods,secrets", "-A", "-l", "hypershift.dev/machine", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("left after destroy:\n%s", out)
		}
	})
}

// machinePods lists the machine pods of a namespace that run, sorted.
func machinePods(t *testing.T, kc, ns string) []string {
	t.Helper()
	out := mustKubectl(t, kc, "-n", ns, "get", "pods", "-l", "hypershift.dev/machine", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.metadata.deletionTimestamp}{"\n"}{end}`)
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[1] == "Running" {
			names = append(names, f[0])
		}
	}
	sort.Strings(names)
	return names
}

// kubeRuntimeLoadBalancer: a guest LoadBalancer Service (Local traffic
// policy, a pod on each machine) gets a mirror in the control-plane
// namespace, a selector-less LoadBalancer Service whose endpoints are the
// machine pods at the guest's node port. The management cluster has no
// load-balancer implementation (as it has no storage provisioner): the
// test gives the mirror its address as MetalLB would, the management
// node's own, on which the node's kube-proxy serves it. The guest Service
// then carries that address, a client on this host outside the guest is
// answered by the pods of both machines through it, and deleting the
// guest Service deletes the mirror.
func kubeRuntimeLoadBalancer(t *testing.T, mgmt, kc, machines string, nodes []string, nodeIP string) {
	const controlPlane, port = "clusters-mach", "18080"
	image, err := os.Open(buildHelloImage(t))
	if err != nil {
		t.Fatal(err)
	}
	defer image.Close()
	for _, n := range nodes {
		if _, err := image.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(kubectlPath(t), "--kubeconfig", mgmt, "-n", machines, "exec", "-i", n, "--",
			"sh", "-c", "cat > /var/lib/hello.tar && hypershift node load-image /var/lib/hello.tar && rm /var/lib/hello.tar")
		cmd.Env, cmd.Stdin = withoutKubeconfig(), image
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("load the workload image into machine %s: %v\n%s", n, err, out)
		}
	}
	manifest := filepath.Join(t.TempDir(), "lb.yaml")
	writeFile(t, manifest, helloDeployment(2)+`---
apiVersion: v1
kind: Service
metadata:
  name: hello
spec:
  type: LoadBalancer
  externalTrafficPolicy: Local
  selector: {app: hello}
  ports:
  - {name: http, port: `+port+`, targetPort: 8080}
`)
	start := time.Now()
	mustKubectl(t, kc, "apply", "-f", manifest)
	mustKubectl(t, kc, "rollout", "status", "deployment/hello", "--timeout=3m")
	uid := strings.TrimSpace(mustKubectl(t, kc, "get", "service", "hello", "-o", "jsonpath={.metadata.uid}"))
	var mirror string
	eventually(t, time.Minute, "the mirror of default/hello with both machines as endpoints", func() error {
		mirror = strings.TrimSpace(mustKubectl(t, mgmt, "-n", controlPlane, "get", "services", "-l", "hypershift.dev/guest-service-uid="+uid, "-o", "jsonpath={.items[*].metadata.name}"))
		if mirror == "" {
			return errorf("no mirror")
		}
		eps := mustKubectl(t, mgmt, "-n", controlPlane, "get", "endpointslices", "-l", "kubernetes.io/service-name="+mirror,
			"-o", `jsonpath={range .items[*].endpoints[*]}{.hostname} {end}`)
		if got := strings.Fields(eps); len(got) != 2 {
			return errorf("endpoints on machines %v, want both", got)
		}
		return nil
	})
	spec := mustKubectl(t, mgmt, "-n", controlPlane, "get", "service", mirror, "-o", `jsonpath={.spec.type} {.spec.selector} {.spec.ports[0].port}`)
	if spec != "LoadBalancer  "+port {
		t.Errorf("mirror %s: type, selector and port %q, want a LoadBalancer on %s without a selector", mirror, spec, port)
	}
	mustKubectl(t, mgmt, "-n", controlPlane, "patch", "service", mirror, "--subresource=status", "--type=merge",
		"-p", `{"status":{"loadBalancer":{"ingress":[{"ip":"`+nodeIP+`"}]}}}`)
	eventually(t, time.Minute, "the guest Service to carry the mirror's address", func() error {
		if got := mustKubectl(t, kc, "get", "service", "hello", "-o", "jsonpath={.status.loadBalancer.ingress[*].ip}"); got != nodeIP {
			return errorf("ingress %q", got)
		}
		return nil
	})
	url := "http://" + net.JoinHostPort(nodeIP, port) + "/"
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	answered := map[string]bool{}
	eventually(t, time.Minute, "both machines' pods to answer at "+url, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if !strings.HasPrefix(string(body), "hello from hello-") {
			return errorf("answer %d %q", resp.StatusCode, body)
		}
		answered[strings.TrimSpace(string(body))] = true
		if len(answered) < 2 {
			return errorf("answered by %v", answered)
		}
		return nil
	})
	t.Logf("guest LoadBalancer Service applied → answered by both machines' pods at its mirror's address: %.1fs", time.Since(start).Seconds())

	mustKubectl(t, kc, "delete", "service", "hello", "--timeout=1m")
	eventually(t, time.Minute, "the mirror to be gone", func() error {
		if out := mustKubectl(t, mgmt, "-n", controlPlane, "get", "services,endpointslices", "-l", "hypershift.dev/guest-service-uid="+uid, "-o", "name"); strings.TrimSpace(out) != "" {
			return errorf("left:\n%s", out)
		}
		return nil
	})
	mustKubectl(t, kc, "delete", "deployment", "hello")
}

// guestVolumeClass is the management cluster's class of the guest's
// claims in TestKubeRuntime.
const guestVolumeClass = "hypershift-e2e-guest"

// kubeRuntimeVolumes: a guest claim of class standard (mapped to
// guestVolumeClass) becomes a claim of the management cluster in the
// machines' namespace; a pod on the first machine writes a file to it
// (the claim attached to that machine by an attachment pod, published by
// the node's CSI plugin); deleted, the pod is made again on the other
// machine and reads the file back; deleting the guest claim deletes the
// management cluster's.
func kubeRuntimeVolumes(t *testing.T, mgmt, kc, machines string, nodes []string) {
	const text = "kept across machines"
	pod := func(name, node string, args ...string) string {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: Never
  nodeSelector: {kubernetes.io/hostname: %s}
  containers:
  - name: main
    image: %s
    command: ["/hello", %s]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`, name, node, workloadImage, strings.Join(quoted, ", "))
	}
	manifest := filepath.Join(t.TempDir(), "claim.yaml")
	writeFile(t, manifest, `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  storageClassName: standard
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 100Mi}}
---
`+pod("writer", nodes[0], "write", "/data/f", text))
	start := time.Now()
	mustKubectl(t, kc, "apply", "-f", manifest)
	uid := strings.TrimSpace(mustKubectl(t, kc, "get", "pvc", "data", "-o", "jsonpath={.metadata.uid}"))
	infra := "vol-" + uid
	waitPodDone(t, kc, "writer")
	t.Logf("guest claim applied → written by a pod on %s: %.1fs", nodes[0], time.Since(start).Seconds())
	if got := mustKubectl(t, mgmt, "-n", machines, "get", "pvc", infra, "-o", "jsonpath={.spec.storageClassName} {.status.phase}"); got != guestVolumeClass+" Bound" {
		t.Errorf("the management cluster's claim %s/%s: class and phase %q, want %s Bound", machines, infra, got, guestVolumeClass)
	}

	start = time.Now()
	mustKubectl(t, kc, "delete", "pod", "writer", "--timeout=2m")
	readerManifest := filepath.Join(t.TempDir(), "reader.yaml")
	writeFile(t, readerManifest, pod("reader", nodes[1], "cat", "/data/f"))
	mustKubectl(t, kc, "apply", "-f", readerManifest)
	waitPodDone(t, kc, "reader")
	if out := mustKubectl(t, kc, "logs", "reader"); !strings.Contains(out, text) {
		t.Errorf("the pod on %s read %q, want %q", nodes[1], out, text)
	}
	t.Logf("pod deleted → made again on %s and read the file back: %.1fs", nodes[1], time.Since(start).Seconds())

	mustKubectl(t, kc, "delete", "pod", "reader", "--timeout=2m")
	mustKubectl(t, kc, "delete", "pvc", "data", "--timeout=2m")
	eventually(t, 2*time.Minute, "the management cluster's claim and the guest volume to be gone", func() error {
		if out, err := kubectl(t, mgmt, "-n", machines, "get", "pvc", infra); err == nil {
			return errorf("claim still there:\n%s", out)
		}
		if out := mustKubectl(t, kc, "get", "pv", "-o", "name"); strings.TrimSpace(out) != "" {
			return errorf("guest volumes left:\n%s", out)
		}
		return nil
	})
	if out := mustKubectl(t, mgmt, "-n", machines, "get", "pods", "-l", "hypershift.dev/volume-attachment-uid", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("attachment pods left:\n%s", out)
	}
}

// waitPodDone waits until a pod that runs once has succeeded.
func waitPodDone(t *testing.T, kc, name string) {
	t.Helper()
	eventually(t, 4*time.Minute, "pod "+name+" to succeed", func() error {
		phase := mustKubectl(t, kc, "get", "pod", name, "-o", "jsonpath={.status.phase}")
		switch phase {
		case "Succeeded":
			return nil
		case "Failed":
			out, _ := kubectl(t, kc, "logs", name)
			t.Fatalf("pod %s failed:\n%s", name, out)
		}
		events, _ := kubectl(t, kc, "get", "events", "--field-selector", "involvedObject.name="+name, "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
		return errorf("phase %q; events:\n%s", phase, lastLines(events, 3))
	})
}
