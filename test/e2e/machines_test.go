package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// TestMachines: two machines on this host (`hypershift machine`), each a
// network, mount and UTS namespace of its own, run the output of `create
// join-command` as userdata and become two real Ready nodes of one hosted
// cluster, named for the machines, at their own addresses; an image is
// loaded into each and a pod on each node answers `kubectl logs` through
// its kubelet; a node that reports the other's address in its status gets
// no serving certificate for it (its recorded address is its own), and a
// Konnectivity agent run on it with its token, declaring the other's
// address, is refused by the server; deleting
// the machines leaves the host as it was (iptables,
// links, addresses, routes, kernel parameters, cgroups, host
// directories), and the network goes with its last machine.
//
// A wholeHost test: its kubelets set kernel-wide parameters and add top
// cgroups, which the host comparisons of the other such tests read.
func TestMachines(t *testing.T) {
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
	m := regexp.MustCompile(`on bridge (\S+); this host is (\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("machine network does not say its bridge and the host's address:\n%s", out)
	}
	ours := []string{m[1]} // the bridge, then each machine's veth
	gateway := m[2]
	var names []string
	t.Cleanup(func() {
		for _, name := range names {
			if r := pre.run("machine", "--machines-dir", machinesDir, "delete", name); r.err != nil && !strings.Contains(r.stderr, "no machine") {
				t.Errorf("machine delete %s: %v\n%s%s", name, r.err, r.stdout, r.stderr)
			}
		}
		if r := pre.run("machine", "--machines-dir", machinesDir, "network", "--delete"); r.err != nil {
			t.Errorf("machine network --delete: %v\n%s", r.err, r.stderr)
		}
		if left := existingLinks(ours); len(left) > 0 {
			t.Errorf("machine links left on the host: %v", left)
		}
	})

	// The management plane publishes hosted API servers on the machine
	// network's host address, which the machines reach.
	hs := upCLI(t, "--endpoint-host", gateway)
	hs.must("create", "cluster", "none", "--name", "m", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("m")
	userdata := filepath.Join(t.TempDir(), "join.sh")
	writeFile(t, userdata, "set -e\n"+hs.must("create", "join-command", "--name", "m")+"\n")
	t.Cleanup(func() {
		dumpOnFailure(t, hs, "m", kc, filepath.Join(machinesDir, "m1", "root", "var-lib", "hypershift-node"))
	})
	image := buildHelloImage(t)

	addresses := map[string]string{}
	for _, name := range []string{"m1", "m2"} {
		names = append(names, name)
		start := time.Now()
		out := machine("create", name, "--userdata", userdata)
		t.Logf("machine create %s → Node Ready: %.1fs", name, time.Since(start).Seconds())
		m := regexp.MustCompile(`machine ` + name + ` \((\S+)\) created`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("machine create %s does not say its address:\n%s", name, out)
		}
		addresses[name] = m[1]
		var record struct {
			HostLink string `json:"hostLink"`
		}
		data, err := os.ReadFile(filepath.Join(machinesDir, name, "machine.json"))
		if err != nil || json.Unmarshal(data, &record) != nil || record.HostLink == "" {
			t.Fatalf("machine %s's record: %v\n%s", name, err, data)
		}
		ours = append(ours, record.HostLink)
		machine("exec", name, "--", "hypershift", "node", "load-image", image)
	}
	if addresses["m1"] == addresses["m2"] || !strings.HasPrefix(addresses["m1"], strings.TrimSuffix(cidr, "0/24")) {
		t.Errorf("machine addresses %v, want two distinct addresses of %s", addresses, cidr)
	}
	// Each Node carries its machine's provider ID, which the userdata's
	// join found in its environment (Cluster API matches Machines so).
	nodes := mustKubectl(t, kc, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.status.conditions[?(@.type=="Ready")].status} {.spec.providerID}{"\n"}{end}`)
	for name, addr := range addresses {
		if !strings.Contains(nodes, name+" "+addr+" True hypershift-host://"+name+"\n") {
			t.Errorf("no Ready node %s at %s with provider ID hypershift-host://%s:\n%s", name, addr, name, nodes)
		}
	}
	if list := machine("list"); !regexp.MustCompile(`(?m)^m1\s+\S+\s+hypershift-host://m1\s+[1-9]`).MatchString(list) {
		t.Errorf("machine list does not show m1 with its provider ID and processes:\n%s", list)
	}

	t.Run("a pod on each machine answers kubectl logs through its kubelet", func(t *testing.T) {
		for name := range addresses {
			pod := filepath.Join(t.TempDir(), "pod.yaml")
			writeFile(t, pod, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hello-%[1]s
  labels:
    app: hello
spec:
  nodeName: %[1]s
  containers:
  - name: hello
    image: hypershift.test/hello:1
    imagePullPolicy: Never
`, name))
			mustKubectl(t, kc, "apply", "-f", pod)
		}
		for name := range addresses {
			mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/hello-"+name, "--timeout=120s")
			eventually(t, time.Minute, "kubectl logs hello-"+name, func() error {
				if out, err := kubectl(t, kc, "logs", "hello-"+name); err != nil || !strings.Contains(out, "hello from hello-"+name) {
					return fmt.Errorf("kubectl logs hello-%s: %s", name, outcome(out, err))
				}
				return nil
			})
		}
	})

	t.Run("pods on different machines reach each other and a Service's pods on both", func(t *testing.T) {
		ips := map[string]string{}
		for name := range addresses {
			ips[name] = mustKubectl(t, kc, "get", "pod", "hello-"+name, "-o", "jsonpath={.status.podIP}")
		}
		for from, to := range map[string]string{"m1": "m2", "m2": "m1"} {
			eventually(t, time.Minute, "hello-"+from+" reaches hello-"+to, func() error {
				out, err := kubectl(t, kc, "exec", "hello-"+from, "--", "/hello", "get", "http://"+ips[to]+":8080/")
				if err != nil || !strings.Contains(out, "hello from hello-"+to) {
					return fmt.Errorf("%s", outcome(out, err))
				}
				return nil
			})
		}
		mustKubectl(t, kc, "expose", "pod", "hello-m1", "--name", "hello", "--port", "8080", "--selector", "app=hello")
		svc := mustKubectl(t, kc, "get", "service", "hello", "-o", "jsonpath={.spec.clusterIP}")
		for _, from := range []string{"m1", "m2"} {
			seen := map[string]bool{}
			eventually(t, time.Minute, "the Service's both pods answer from hello-"+from, func() error {
				out, err := kubectl(t, kc, "exec", "hello-"+from, "--", "/hello", "get", "http://"+svc+":8080/")
				if err == nil {
					for name := range addresses {
						if strings.Contains(out, "hello from hello-"+name) {
							seen[name] = true
						}
					}
				}
				if len(seen) < 2 {
					return fmt.Errorf("seen %v; last %s", seen, outcome(out, err))
				}
				return nil
			})
		}
	})

	t.Run("a node gets no serving certificate for another node's address it claims", func(t *testing.T) {
		nodeAsMachine(t, kc, machinesDir, "m2", addresses["m1"], addresses["m2"])
	})

	t.Run("a node's Konnectivity agent cannot register for another node's address", func(t *testing.T) {
		serverLog := filepath.Join(hs.dataDir, "clusters", "clusters-m", "konnectivity-server", "konnectivity-server.log")
		agentAsMachine(t, pre, kc, machinesDir, serverLog, "m2", addresses["m1"])
		// The real agents still carry the API server's traffic to m1.
		if out, err := kubectl(t, kc, "logs", "hello-m1"); err != nil || !strings.Contains(out, "hello from hello-m1") {
			t.Errorf("kubectl logs hello-m1 after the impostor: %s", outcome(out, err))
		}
	})

	t.Run("deleting the machines leaves the host as it was", func(t *testing.T) {
		start := time.Now()
		machine("delete", "m1", "m2")
		t.Logf("machine delete m1 m2: %.1fs", time.Since(start).Seconds())
		if list := machine("list"); strings.Contains(list, "m1") || strings.Contains(list, "m2") {
			t.Errorf("machine list after delete:\n%s", list)
		}
		machine("network", "--delete")
		if left := existingLinks(ours); len(left) > 0 {
			t.Errorf("machine links left on the host: %v", left)
		}
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
	})
}

// pickMachineNetwork is a /24 of 10.212/16 that no route of the host
// overlaps.
func pickMachineNetwork(t *testing.T) string {
	t.Helper()
	used := hostPrefixes(t)
	for range 50 {
		b := randomBytes(t, 1)
		subnet := &net.IPNet{IP: net.IPv4(10, 212, b[0], 0).To4(), Mask: net.CIDRMask(24, 32)}
		if !overlapsAny(subnet, used) {
			return subnet.String()
		}
	}
	t.Fatalf("no free /24 in 10.212.0.0/16: the host uses %v", used)
	return ""
}

// existingLinks lists those of the named links that exist.
func existingLinks(names []string) []string {
	var out []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join("/sys/class/net", name)); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// agentAsMachine runs, in machine name, a Konnectivity agent with
// everything a node's root has: the cluster's agent certificate and a
// token bound to the node's own agent pod (as the kubelet mounts it). It
// declares another node's address, and the server refuses it, saying why
// in its log (the agent sees only that it could not connect).
func agentAsMachine(t *testing.T, pre *cli, kc, machinesDir, serverLog, name, otherIP string) {
	t.Helper()
	ns := "kube-system"
	pod := mustKubectl(t, kc, "-n", ns, "get", "pods", "-l", "k8s-app=konnectivity-agent", "--field-selector", "spec.nodeName="+name,
		"-o", "jsonpath={.items[0].metadata.name}")
	token := mustKubectl(t, kc, "-n", ns, "create", "token", "konnectivity-agent", "--audience", pki.KonnectivityAudience,
		"--bound-object-kind", "Pod", "--bound-object-name", pod, "--duration", "10m")
	dir := t.TempDir() // under /tmp, which a machine shares with the host
	for file, key := range map[string]string{"ca.crt": "ca\\.crt", "tls.crt": "tls\\.crt", "tls.key": "tls\\.key"} {
		data, err := base64.StdEncoding.DecodeString(mustKubectl(t, kc, "-n", ns, "get", "secret", "konnectivity-agent", "-o", "jsonpath={.data."+key+"}"))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, file), string(data))
	}
	writeFile(t, filepath.Join(dir, "token"), strings.TrimSpace(token))
	var daemonArgs, server []string
	if err := json.Unmarshal([]byte(mustKubectl(t, kc, "-n", ns, "get", "daemonset", "konnectivity-agent",
		"-o", "jsonpath={.spec.template.spec.containers[0].args}")), &daemonArgs); err != nil {
		t.Fatal(err)
	}
	for _, arg := range daemonArgs {
		if strings.HasPrefix(arg, "--proxy-server-") {
			server = append(server, arg)
		}
	}
	if len(server) != 2 {
		t.Fatalf("the agents' server host and port among %q", daemonArgs)
	}
	args := []string{"machine", "--machines-dir", machinesDir, "exec", name, "--", "timeout", "10", "hypershift", "component", "konnectivity-agent"}
	args = append(args, server...)
	args = append(args, "--ca-cert="+filepath.Join(dir, "ca.crt"), "--agent-cert="+filepath.Join(dir, "tls.crt"),
		"--agent-key="+filepath.Join(dir, "tls.key"), "--service-account-token-path="+filepath.Join(dir, "token"),
		"--agent-id="+name, "--agent-identifiers=ipv4="+otherIP,
		// The node's own agent holds the default ports in the machine.
		"--health-server-port=18093", "--admin-server-port=18094", "--sync-interval=1s")
	r := pre.run(args...)
	if !strings.Contains(r.stderr, "cannot connect once") {
		t.Errorf("an agent on %s declaring %s: want it refused; it printed:\n%s%s", name, otherIP, r.stdout, r.stderr)
	}
	want := "node " + name + ": identifier ipv4=" + otherIP + " is not an address recorded for the node"
	log, err := os.ReadFile(serverLog)
	if err != nil || !strings.Contains(string(log), want) {
		t.Fatalf("the server's log does not say %q (%v):\n%s", want, err, lastLines(string(log), 10))
	}
	t.Logf("an agent on %s declaring %s: refused (%s)", name, otherIP, lastMatching(string(log), want))
}

// lastMatching is the last line of s that contains sub.
func lastMatching(s, sub string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], sub) {
			return lines[i]
		}
	}
	return ""
}

// nodeAsMachine acts as the kubelet of machine name, with its client
// certificate from the machine's node directory: its own Node's recorded
// address is its own; it reports another node's address in its status and
// asks for a serving certificate for it, which is not approved, while one
// for its own address is.
func nodeAsMachine(t *testing.T, kc, machinesDir, name, otherIP, ownIP string) {
	t.Helper()
	admin := restConfig(t, kc)
	admin.Timeout = 10 * time.Second
	adminClient := kubernetes.NewForConfigOrDie(admin)
	n, err := adminClient.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if addrs, ok := bootstrap.RecordedAddresses(n); !ok || !slices.Contains(addrs, ownIP) || slices.Contains(addrs, otherIP) {
		t.Fatalf("node %s's recorded addresses: %v (recorded %v), want its own %s only", name, addrs, ok, ownIP)
	}
	// The kubelet's current-certificate link is absolute, in the
	// machine's view: /var/lib there is root/var-lib here.
	varLib := filepath.Join(machinesDir, name, "root", "var-lib")
	current := filepath.Join(varLib, "hypershift-node", "kubelet-pki", "kubelet-client-current.pem")
	if target, err := os.Readlink(current); err == nil && strings.HasPrefix(target, "/var/lib/") {
		current = filepath.Join(varLib, strings.TrimPrefix(target, "/var/lib/"))
	}
	pair, err := os.ReadFile(current)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(admin)
	cfg.BearerToken, cfg.Username, cfg.Password = "", "", ""
	cfg.CertFile, cfg.KeyFile = "", ""
	cfg.CertData, cfg.KeyData = pair, pair
	node := kubernetes.NewForConfigOrDie(cfg)
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: ownIP}, {Type: corev1.NodeInternalIP, Address: otherIP}, {Type: corev1.NodeHostName, Address: name},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.CoreV1().Nodes().Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("node %s reports %s in its status: %v", name, otherIP, err)
	}
	create := func(ip string) string {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
			IPAddresses: []net.IP{net.ParseIP(ip)},
		}, key)
		if err != nil {
			t.Fatal(err)
		}
		csr, err := node.CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-serving-"},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName: certificatesv1.KubeletServingSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("node %s asks for a serving certificate for %s: %v", name, ip, err)
		}
		return csr.Name
	}
	claimed, own := create(otherIP), create(ownIP)
	approved := func(csr string) bool {
		got, err := adminClient.CertificatesV1().CertificateSigningRequests().Get(t.Context(), csr, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved {
				return true
			}
		}
		return false
	}
	eventually(t, time.Minute, "node "+name+"'s serving CSR for its own address approved", func() error {
		if !approved(own) {
			return fmt.Errorf("CSR %s pending", own)
		}
		return nil
	})
	if approved(claimed) {
		t.Errorf("node %s got a serving certificate for %s, node m1's address", name, otherIP)
	}
}
