package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/hostnet"
)

// outsideName is a name that exists only in the test's upstream DNS
// server (.test is reserved: no real resolver answers it).
const outsideName = "outside.hypershift-e2e.test."

// TestWholeCluster is a hosted cluster with a real node used like any
// cluster: Services route (ClusterIP, headless, NodePort), cluster DNS
// answers and forwards, pods reach the API server as their service
// account; `describe cluster` shows the in-cluster objects the control
// plane applies and one changed by hand comes back; and `join --reset`
// leaves the host as it found it, kube-proxy's rules and the API proxy's
// address included.
func TestWholeCluster(t *testing.T) {
	wholeHost(t)
	requireRealNode(t)
	hs := upCLI(t)
	joinArgs := joinCommandArgs(t, hs.must("create", "cluster", "none", "--name", "w", "--wait", "--timeout", "3m"))
	kc := hs.adminKubeconfig("w")
	nets := readClusterNetworks(t, hs, "w")
	image := buildHelloImage(t)

	nodeIP := hostnet.HostIPv4()
	if nodeIP == nil {
		t.Fatal("this host has no global IPv4 address for the node")
	}
	upstream := startUpstreamDNS(t, nodeIP, outsideName, net.IPv4(203, 0, 113, 53))
	// Before the host is recorded: the rule is the host's, reset keeps it.
	noForward := redirectPodDNS(t, nets.cluster, upstream)

	nodeDir := filepath.Join(shortTempDir(t), "node")
	before := resetWhenDone(t, hs, nodeDir)
	t.Cleanup(func() { dumpOnFailure(t, hs, "w", kc, nodeDir) })

	start := time.Now()
	node := joinNode(t, hs, joinArgs, "--node-dir", nodeDir)
	if !node.ip.Equal(nodeIP) {
		t.Fatalf("the node joined with address %s, want the host's %s", node.ip, nodeIP)
	}
	dnsIP, apiIP := nthAddress(t, nets.service, 10), nthAddress(t, nets.service, 1)
	dnsServer := net.JoinHostPort(dnsIP.String(), "53")
	eventually(t, 3*time.Minute, "cluster DNS "+dnsServer+" to answer kubernetes.default.svc.cluster.local from the node", func() error {
		got, err := lookupAt(dnsServer, "kubernetes.default.svc.cluster.local.")
		if err != nil || strings.Join(got, ",") != apiIP.String() {
			return fmt.Errorf("got %s; want %s", outcome(strings.Join(got, ","), err), apiIP)
		}
		return nil
	})
	t.Logf("join start → cluster DNS answering on the node: %.1fs", time.Since(start).Seconds())
	hs.must("node", "load-image", image, "--node-dir", nodeDir)

	t.Run("services and DNS", func(t *testing.T) {
		checkServicesAndDNS(t, kc, node, dnsIP, upstream, noForward)
	})
	t.Run("describe shows the data plane and a changed object comes back", func(t *testing.T) {
		checkDataPlaneRestored(t, hs, "w", kc, dnsServer)
	})
	t.Run("join --reset leaves the host as found", func(t *testing.T) {
		r := hs.run("join", "--reset", "--node-dir", nodeDir)
		if r.err != nil || !strings.Contains(r.stdout, "node "+node.name+" stopped") {
			t.Errorf("join --reset: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
		}
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("join --reset left the host changed (kube-proxy's chains and rules, the API proxy's address on lo, kernel parameters are all in here):\n  %s", strings.Join(diff, "\n  "))
		}
		if _, err := os.Stat(nodeDir); err == nil {
			t.Errorf("join --reset left %s", nodeDir)
		}
		if pids := pidsUnder(t, nodeDir); len(pids) > 0 {
			t.Errorf("join --reset left processes %v", pids)
		}
		if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), nodeDir) {
			t.Errorf("join --reset left mounts under %s", nodeDir)
		}
	})
}

var joinedRE = regexp.MustCompile(`as node (\S+) \((\S+)\)`)

func parseJoin(t *testing.T, out string) joinedNode {
	t.Helper()
	m := joinedRE.FindStringSubmatch(out)
	if m == nil || !regexpMatch(out, `node \S+ is Ready \(\d+\.\ds\)`) {
		t.Fatalf("join did not report a Ready node:\n%s", out)
	}
	t.Logf("%s", strings.TrimSpace(out))
	return joinedNode{name: m[1], ip: net.ParseIP(m[2])}
}

type clusterNetworks struct{ service, cluster string }

func readClusterNetworks(t *testing.T, hs *cli, name string) clusterNetworks {
	t.Helper()
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	get := func(path string) string {
		return strings.TrimSpace(mustKubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", name, "-o", "jsonpath={.spec.networking."+path+"[0].cidr}"))
	}
	n := clusterNetworks{service: get("serviceNetwork"), cluster: get("clusterNetwork")}
	if n.service == "" || n.cluster == "" {
		t.Fatalf("hosted cluster %s has networks %+v", name, n)
	}
	return n
}

// nthAddress is the nth address of an IPv4 CIDR (1: the kubernetes
// Service, 10: cluster DNS).
func nthAddress(t *testing.T, cidr string, n int) net.IP {
	t.Helper()
	_, ipnet, err := net.ParseCIDR(cidr)
	if err != nil || ipnet.IP.To4() == nil {
		t.Fatalf("service network %q: %v", cidr, err)
	}
	ip := append(net.IP(nil), ipnet.IP.To4()...)
	ip[3] += byte(n)
	return ip
}

// outcome formats a command's output and error for a message.
func outcome(out string, err error) string {
	if err != nil {
		return fmt.Sprintf("%q (%v)", out, err)
	}
	return fmt.Sprintf("%q", out)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("(%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

const webManifest = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: hypershift.test/hello:1
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: web-headless
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 8080}]
---
apiVersion: v1
kind: Service
metadata:
  name: web-nodeport
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  containers:
  - name: client
    image: hypershift.test/hello:1
    imagePullPolicy: Never
`

// checkServicesAndDNS runs the web Deployment, its Services and a client
// pod, and checks each path a workload uses, one subtest per path.
func checkServicesAndDNS(t *testing.T, kc string, node joinedNode, dnsIP net.IP, upstream *upstreamDNS, noForward string) {
	manifest := filepath.Join(t.TempDir(), "web.yaml")
	writeFile(t, manifest, webManifest)
	mustKubectl(t, kc, "apply", "-f", manifest)
	mustKubectl(t, kc, "rollout", "status", "deployment/web", "--timeout=120s")
	mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
	exec := func(args ...string) (string, error) {
		return kubectl(t, kc, append([]string{"exec", "client", "--", "/hello"}, args...)...)
	}
	clusterIP := strings.TrimSpace(mustKubectl(t, kc, "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}"))
	podIPs, podNames := webPods(t, kc)

	t.Run("kube-dns has the 10th address of the service network", func(t *testing.T) {
		if got := strings.TrimSpace(mustKubectl(t, kc, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}")); got != dnsIP.String() {
			t.Errorf("Service kube-system/kube-dns has clusterIP %q, want %s (the kubelet's clusterDNS)", got, dnsIP)
		}
	})
	t.Run("a Service name resolves to its ClusterIP", func(t *testing.T) {
		for _, name := range []string{"web.default.svc.cluster.local", "web"} {
			if out, err := exec("resolve", name); err != nil || strings.TrimSpace(out) != clusterIP {
				t.Errorf("in pod client, resolve %s: %v\n%s\nwant %s", name, err, out, clusterIP)
			}
		}
	})
	t.Run("the ClusterIP balances over both pods", func(t *testing.T) {
		// kube-proxy programs a new endpoint a moment after it is ready.
		eventually(t, 30*time.Second, "20 GETs from pod client of http://web.default.svc.cluster.local/ answered by each of "+strings.Join(podNames, ", "), func() error {
			out, err := exec("get", "-n", "20", "http://web.default.svc.cluster.local/")
			answered := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if name, ok := strings.CutPrefix(line, "HTTP 200 hello from "); ok {
					answered[name] = true
				}
			}
			if err != nil || fmt.Sprint(sortedKeys(answered)) != fmt.Sprint(podNames) {
				return fmt.Errorf("answered by %v: %s", sortedKeys(answered), outcome(out, err))
			}
			return nil
		})
		if out, err := exec("get", "http://"+clusterIP+"/"); err != nil || !strings.HasPrefix(out, "HTTP 200 hello from web-") {
			t.Errorf("in pod client, GET http://%s/ (the ClusterIP): %v\n%s", clusterIP, err, out)
		}
	})
	t.Run("a headless Service resolves to the pod IPs", func(t *testing.T) {
		// The EndpointSlice controller and then CoreDNS's watch see the
		// second ready pod a moment after the rollout reports it.
		eventually(t, 30*time.Second, fmt.Sprintf("in pod client, web-headless.default.svc.cluster.local to resolve to the pod IPs %v", podIPs), func() error {
			out, err := exec("resolve", "web-headless.default.svc.cluster.local")
			if err != nil || strings.Fields(out) == nil || fmt.Sprint(strings.Fields(out)) != fmt.Sprint(podIPs) {
				return fmt.Errorf("resolved to %s", outcome(out, err))
			}
			return nil
		})
	})
	t.Run("a name outside the cluster is forwarded to the node's resolver", func(t *testing.T) {
		if noForward != "" {
			t.Skip(noForward)
		}
		out, err := exec("resolve", outsideName)
		if err != nil || strings.TrimSpace(out) != "203.0.113.53" {
			t.Errorf("in pod client, resolve %s: %v\n%s\nwant 203.0.113.53 from the test's upstream, which was asked:\n%s", outsideName, err, out, strings.Join(upstream.asked(), "\n"))
		}
	})
	t.Run("a NodePort answers on the node's address from the host", func(t *testing.T) {
		port := strings.TrimSpace(mustKubectl(t, kc, "get", "service", "web-nodeport", "-o", "jsonpath={.spec.ports[0].nodePort}"))
		url := "http://" + net.JoinHostPort(node.ip.String(), port) + "/"
		eventually(t, 30*time.Second, "NodePort "+url+" to answer from the host", func() error {
			resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.HasPrefix(string(body), "hello from web-") {
				return fmt.Errorf("HTTP %d %q, want a web pod's greeting", resp.StatusCode, body)
			}
			return nil
		})
	})
	t.Run("a pod reaches https://kubernetes.default.svc as its service account", func(t *testing.T) {
		// 200 on /api: the name resolves, the node's API proxy forwards,
		// and the server's certificate verifies against the pod's CA.
		if out, err := exec("api", "/api"); err != nil || !strings.HasPrefix(out, "HTTP 200\n") || !regexpMatch(out, `"kind":\s*"APIVersions"`) {
			t.Errorf("in pod client, GET https://kubernetes.default.svc/api: %v\n%s\nwant HTTP 200 and APIVersions", err, out)
		}
		// 403 naming the service account: the token was authenticated
		// (an unauthenticated request is 401, or 403 for system:anonymous).
		out, err := exec("api", "/api/v1/namespaces/kube-system/secrets")
		if err != nil || !strings.HasPrefix(out, "HTTP 403\n") || !strings.Contains(out, `User \"system:serviceaccount:default:default\" cannot list resource \"secrets\"`) {
			t.Errorf("in pod client, GET .../kube-system/secrets: %v\n%s\nwant HTTP 403 for system:serviceaccount:default:default", err, out)
		}
	})
}

// webPods returns the sorted IPs and names of the web Deployment's pods.
func webPods(t *testing.T, kc string) (ips, names []string) {
	t.Helper()
	out := mustKubectl(t, kc, "get", "pods", "-l", "app=web", "-o", "json")
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Status   struct{ PodIP string }
		}
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		ips, names = append(ips, p.Status.PodIP), append(names, p.Metadata.Name)
	}
	sort.Strings(ips)
	sort.Strings(names)
	if len(ips) != 2 {
		t.Fatalf("the web Deployment has pods %v, want 2", names)
	}
	return ips, names
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
