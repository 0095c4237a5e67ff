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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// Helpers of the tests that use machines of this host (`hypershift
// machine`, a machines directory): their network, their records, and
// what a node's root could try from one.

// pickMachineNetwork is a /24 of 10.212/16 that no route of the host
// overlaps.
func pickMachineNetwork(t *testing.T) string {
	t.Helper()
	used := hostPrefixes(t)
	for range 50 {
		b := randomBytes(t, 1)
		subnet := &net.IPNet{IP: net.IPv4(10, 212, b[0], 0).To4(), Mask: net.CIDRMask(24, 32)}
		if !hostnet.OverlapsAny(subnet, used) {
			return subnet.String()
		}
	}
	t.Fatalf("no free /24 in 10.212.0.0/16: the host uses %v", used)
	return ""
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
		t.Errorf("node %s got a serving certificate for %s, another node's address", name, otherIP)
	}
}

// killMachine kills every process in the network namespace of machine
// name — as a machine whose host crashed — and says how many it killed.
func killMachine(t *testing.T, machinesDir, name string) int {
	t.Helper()
	record := readMachineRecord(t, machinesDir, name)
	if record.NetnsInode == 0 {
		t.Fatalf("machine %s's record names no network namespace", name)
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

// machineRecord is what a machine's machine.json says of it.
type machineRecord struct {
	Address    string `json:"address"`
	HostLink   string `json:"hostLink"`
	NetnsInode uint64 `json:"netnsInode"`
}

// readMachineRecord reads machine name's record; it must name its
// address and its host link.
func readMachineRecord(t *testing.T, machinesDir, name string) machineRecord {
	t.Helper()
	var r machineRecord
	data, err := os.ReadFile(filepath.Join(machinesDir, name, "machine.json"))
	if err != nil || json.Unmarshal(data, &r) != nil || r.Address == "" || r.HostLink == "" {
		t.Fatalf("machine %s's record: %v\n%s", name, err, data)
	}
	return r
}

// bridgePorts lists the links on bridge: each machine's veth while it
// exists. Every veth of a machine network is made on its bridge, so an
// empty list means no machine's link is left, whichever machines came and
// went.
func bridgePorts(t *testing.T, bridge string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	if err != nil {
		t.Fatalf("the ports of bridge %s: %v", bridge, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
