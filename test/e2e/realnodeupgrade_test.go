package e2e

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"hypershift.dev/internal/nodes/join"
)

// TestRealNodeInPlaceUpgrade joins this host to a platform None pool at
// v1.36.3 (the release fetched from the control plane's release server with
// the join token), runs a DaemonSet pod that writes a file into an
// emptyDir, and upgrades the pool InPlace to v1.37.1: the node is drained,
// told the version, its daemon fetches that release with the kubelet's
// certificate and restarts the kubelet and kube-proxy from it, and the node
// is uncordoned. The pod is the same pod, never restarted, its file still
// there; the reset leaves the host as it was.
func TestRealNodeInPlaceUpgrade(t *testing.T) {
	wholeHost(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping the real node upgrade: not root, and containerd and the kubelet need root (run it as root)")
	}
	if _, err := join.CheckHost(join.DefaultCNIBinDir); err != nil {
		t.Fatalf("%v (run `make deps` as root)", err)
	}
	const oldVersion, newVersion = "v1.36.3", "v1.37.1"
	hs := upCLI(t)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	hs.must("create", "cluster", "none", "--name", "u", "--kubernetes-version", newVersion, "--wait", "--timeout", "3m")
	hs.must("create", "nodepool", "--platform", "none", "--cluster-name", "u", "--name", "old",
		"--kubernetes-version", oldVersion, "--upgrade-type", "InPlace", "--max-unavailable", "1")
	kc := hs.adminKubeconfig("u")
	joinArgs := joinCommandArgs(t, hs.must("create", "join-command", "--name", "u", "--nodepool", "old"))
	if got := flagValue(t, joinArgs, "--kubernetes-version"); got != oldVersion {
		t.Fatalf("create join-command printed --kubernetes-version %s, want the pool's %s", got, oldVersion)
	}
	// What a node trusts: the release server's URL and the sha256 of each
	// release, published by the control plane.
	info := mustKubectl(t, kc, "-n", "kube-public", "get", "configmap", "hypershift-releases", "-o", "jsonpath={.data}")
	if !strings.Contains(info, `"url":"https://`) || !strings.Contains(info, "sha256."+oldVersion) || !strings.Contains(info, "sha256."+newVersion) {
		t.Fatalf("kube-public/hypershift-releases = %s, want the release server's URL and both releases' sha256", info)
	}

	nodeDir := filepath.Join(shortTempDir(t), "node")
	before := resetWhenDone(t, hs, nodeDir)
	t.Cleanup(func() {
		if t.Failed() {
			events, _ := kubectl(t, kc, "get", "events", "-A", "--sort-by=.lastTimestamp")
			t.Logf("events of the hosted cluster:\n%s", events)
			log, _ := os.ReadFile(filepath.Join(nodeDir, "node.log"))
			t.Logf("node daemon log:\n%s", log)
		}
	})
	out := hs.must(append(joinArgs, "--node-dir", nodeDir)...)
	if !regexpMatch(out, `node \S+ is Ready`) {
		t.Fatalf("join did not report a Ready node:\n%s", out)
	}
	nodeName := strings.Fields(out[strings.Index(out, "node "):])[1]
	if got := mustKubectl(t, kc, "get", "node", nodeName, "-o", "jsonpath={.status.nodeInfo.kubeletVersion}"); got != oldVersion {
		t.Fatalf("node %s reports kubelet %s, want %s", nodeName, got, oldVersion)
	}
	release := filepath.Join(nodeDir, "releases", oldVersion, "kubernetes")
	if _, err := os.Stat(release); err != nil {
		t.Errorf("the release was not cached under the node dir: %v", err)
	}
	for _, c := range []string{join.Kubelet, join.KubeProxy} {
		if got := nodeComponent(t, nodeDir, c); got != release+" "+c {
			t.Errorf("%s runs as %q, want the fetched release %s", c, got, release)
		}
	}

	checkReleaseServer(t, kc, nodeDir, info, oldVersion)

	// A DaemonSet pod stays through a drain (as with kubectl drain
	// --ignore-daemonsets): the upgrade must not restart it.
	hs.must("node", "load-image", buildHelloImage(t), "--node-dir", nodeDir)
	ds := filepath.Join(t.TempDir(), "ds.yaml")
	writeFile(t, ds, `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: keeper
spec:
  selector:
    matchLabels: {app: keeper}
  template:
    metadata:
      labels: {app: keeper}
    spec:
      containers:
      - name: hello
        image: hypershift.test/hello:1
        imagePullPolicy: Never
        volumeMounts:
        - {name: data, mountPath: /data}
      volumes:
      - name: data
        emptyDir: {}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: drained
spec:
  replicas: 1
  selector:
    matchLabels: {app: drained}
  template:
    metadata:
      labels: {app: drained}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: hello
        image: hypershift.test/hello:1
        imagePullPolicy: Never
`)
	mustKubectl(t, kc, "apply", "-f", ds)
	mustKubectl(t, kc, "rollout", "status", "deployment/drained", "--timeout=120s")
	drainedBefore := mustKubectl(t, kc, "get", "pods", "-l", "app=drained", "-o", "jsonpath={.items[*].metadata.uid}")
	eventually(t, 2*time.Minute, "the DaemonSet pod runs", func() error {
		out, _ := kubectl(t, kc, "get", "pods", "-l", "app=keeper", "-o", "jsonpath={.items[*].status.phase}")
		if strings.TrimSpace(out) != "Running" {
			return errorf("pods: %q", out)
		}
		return nil
	})
	podName := mustKubectl(t, kc, "get", "pods", "-l", "app=keeper", "-o", "jsonpath={.items[0].metadata.name}")
	identity := func() string {
		return mustKubectl(t, kc, "get", "pod", podName, "-o", "jsonpath={.metadata.uid} {.status.containerStatuses[0].containerID} {.status.containerStatuses[0].restartCount}")
	}
	podBefore := identity()
	mustKubectl(t, kc, "exec", podName, "--", "/hello", "write", "/data/marker", "kept")

	start := time.Now()
	mustKubectl(t, mgmt, "-n", "clusters", "patch", "nodepool", "old", "--type", "merge", "-p", `{"spec":{"kubernetesVersion":"`+newVersion+`"}}`)
	eventually(t, 4*time.Minute, "the node runs "+newVersion+", Ready and uncordoned", func() error {
		out, err := kubectl(t, kc, "get", "node", nodeName, "-o", `jsonpath={.status.nodeInfo.kubeletVersion} {.spec.unschedulable} {.status.conditions[?(@.type=="Ready")].status}`)
		if err != nil || strings.TrimSpace(out) != newVersion+"  True" {
			return errorf("node: %q %v", out, err)
		}
		return nil
	})
	t.Logf("upgrade of the node took %s", time.Since(start).Round(time.Second))
	if got := mustKubectl(t, kc, "get", "node", nodeName, "-o", `jsonpath={.metadata.annotations.hypershift\.dev/kubernetes-version}`); got != newVersion {
		t.Errorf("node %s is annotated with version %q, want %s", nodeName, got, newVersion)
	}
	// v1.37.1 is the one compiled into hypershift: the node runs its own.
	// kube-proxy restarts once the new kubelet is ready.
	eventually(t, time.Minute, "kubelet and kube-proxy run the compiled-in release", func() error {
		for _, c := range []string{join.Kubelet, join.KubeProxy} {
			if got := nodeComponent(t, nodeDir, c); !strings.HasSuffix(got, " component "+c) {
				return errorf("%s runs as %q, want `hypershift component %s`", c, got, c)
			}
		}
		return nil
	})
	eventually(t, time.Minute, "NodePool old reports "+newVersion, func() error {
		out, _ := kubectl(t, mgmt, "-n", "clusters", "get", "nodepool", "old", "-o", `jsonpath={.status.version} {.status.conditions[?(@.type=="UpdatingVersion")].reason}`)
		if strings.TrimSpace(out) != newVersion+" AsExpected" {
			return errorf("nodepool: %q", out)
		}
		return nil
	})
	// The node was drained: the Deployment's pod was evicted, and its
	// replacement runs once the node is uncordoned.
	eventually(t, 2*time.Minute, "the drained Deployment's new pod runs", func() error {
		out, _ := kubectl(t, kc, "get", "pods", "-l", "app=drained", "-o", "jsonpath={.items[*].metadata.uid} {.items[*].status.phase}")
		f := strings.Fields(out)
		if len(f) != 2 || f[0] == drainedBefore || f[1] != "Running" {
			return errorf("pods of deployment drained: %q (before the upgrade %s)", out, drainedBefore)
		}
		return nil
	})
	// The restarted kubelet serves exec once it has synced the pod from
	// the API server; by then it has also reported the pod's containers.
	eventually(t, time.Minute, "the pod's file is still there", func() error {
		got, err := kubectl(t, kc, "exec", podName, "--", "/hello", "cat", "/data/marker")
		if err != nil || got != "kept" {
			return errorf("the pod's file holds %q (%v), want \"kept\"", got, err)
		}
		return nil
	})
	// The new kubelet reports the container it found running (until then
	// the status may list none): the same container, never restarted.
	var after string
	eventually(t, time.Minute, "the restarted kubelet reports the pod's container", func() error {
		if after = identity(); len(strings.Fields(after)) != 3 {
			return errorf("pod %s: %q", podName, after)
		}
		return nil
	})
	if after != podBefore {
		t.Errorf("the pod changed across the upgrade: before %q, after %q (uid, container, restarts)", podBefore, after)
	}

	if r := hs.run("join", "--reset", "--node-dir", nodeDir); r.err != nil {
		t.Errorf("join --reset: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
	}
	if diff := before.diff(readHost(t)); len(diff) > 0 {
		t.Errorf("join --reset left the host changed:\n  %s", strings.Join(diff, "\n  "))
	}
	if _, err := os.Stat(nodeDir); err == nil {
		t.Errorf("join --reset left %s", nodeDir)
	}
}

// nodeComponent is how the node's component c runs: its program and the
// words that name the component (`kubernetes kubelet`, `hypershift
// component kubelet`); "" when it does not run.
func nodeComponent(t *testing.T, nodeDir, c string) string {
	t.Helper()
	for _, pid := range pidsUnder(t, nodeDir) {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		switch {
		case len(args) > 2 && args[1] == "component" && args[2] == c:
			return strings.Join(args[:3], " ")
		case len(args) > 1 && args[1] == c:
			return strings.Join(args[:2], " ")
		}
	}
	return ""
}

// checkReleaseServer fetches a release from the published release server
// as the node (its kubelet's client certificate): the bytes hash to what
// kube-public/hypershift-releases says. Without credentials it answers 401,
// to the cluster's admin (not a node) 403.
func checkReleaseServer(t *testing.T, kc, nodeDir, info, version string) {
	t.Helper()
	var data map[string]string
	if err := json.Unmarshal([]byte(info), &data); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	var admin tls.Certificate
	for _, c := range cfg.Clusters {
		roots.AppendCertsFromPEM(c.CertificateAuthorityData)
	}
	for _, a := range cfg.AuthInfos {
		if admin, err = tls.X509KeyPair(a.ClientCertificateData, a.ClientKeyData); err != nil {
			t.Fatal(err)
		}
	}
	pem := filepath.Join(nodeDir, "kubelet-pki", "kubelet-client-current.pem")
	node, err := tls.LoadX509KeyPair(pem, pem)
	if err != nil {
		t.Fatal(err)
	}
	url := data["url"] + "/releases/" + version + "/kubernetes"
	get := func(certs ...tls.Certificate) (int, string) {
		client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12},
		}}
		resp, err := client.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		h := sha256.New()
		_, _ = io.Copy(h, resp.Body)
		return resp.StatusCode, hex.EncodeToString(h.Sum(nil))
	}
	if status, sum := get(node); status != http.StatusOK || sum != data["sha256."+version] {
		t.Errorf("the node's certificate got %d, sha256 %s; want 200 and the published %s", status, sum, data["sha256."+version])
	}
	if status, _ := get(); status != http.StatusUnauthorized {
		t.Errorf("no credentials got %d, want 401", status)
	}
	if status, _ := get(admin); status != http.StatusForbidden {
		t.Errorf("the admin's certificate (not a node) got %d, want 403", status)
	}
}
