package coredns_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/testenv"
)

// TestServesClusterDNS runs `hypershift component coredns -conf FILE` — the
// binary, as a node runs it — against a real API server with the plugins of
// a hosted cluster's Corefile, and resolves a Service, a headless Service's
// endpoints, a pod and a name it forwards to an upstream server of the test.
func TestServesClusterDNS(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	const ns = "dns-test"
	mustCreate(t, env, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	web := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	mustCreate(t, env, web)
	mustCreate(t, env, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}},
	})
	mustCreate(t, env, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "db-1", Labels: map[string]string{discoveryv1.LabelServiceName: "db"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.132.0.7"}, Hostname: ptr.To("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"10.132.1.8"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("pg"), Port: ptr.To[int32](5432)}},
	})

	upstream := startUpstream(t, "example.test.", "192.0.2.53")
	dnsPort, healthPort, readyPort, metricsPort := freePort(t), freePort(t), freePort(t), freePort(t)
	dir := t.TempDir()
	corefile := filepath.Join(dir, "Corefile")
	// reload looks every 2s (its minimum), so the test sees a reload.
	corefileFor := func(upstream string) string {
		return fmt.Sprintf(`.:%d {
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    prometheus 127.0.0.1:%d
    forward . %s
    cache 30
    loop
    reload 2s 1s
    loadbalance
    log
}
`, dnsPort, healthPort, readyPort, datadir.Layout{Root: env.DataDir}.ManagementKubeconfig(), metricsPort, upstream)
	}
	writeFile(t, corefile, corefileFor(upstream))

	cmd := exec.CommandContext(ctx, testenv.Binary(t), "component", "coredns", "-conf", corefile)
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("coredns output:\n%s", logs.String())
		}
	})

	testenv.Eventually(t, time.Minute, "coredns /ready", func() (bool, error) {
		select {
		case err := <-exited:
			t.Fatalf("coredns exited: %v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort))
		if err != nil {
			return false, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("/ready: %s", resp.Status)
	})
	server := fmt.Sprintf("127.0.0.1:%d", dnsPort)
	// /ready can answer a moment before the DNS listeners are up (the
	// plugins start first).
	testenv.Eventually(t, 10*time.Second, "coredns to answer on "+server, func() (bool, error) {
		_, _, err := (&dns.Client{Timeout: time.Second}).Exchange(new(dns.Msg).SetQuestion("cluster.local.", dns.TypeSOA), server)
		return err == nil, err
	})
	if err := env.Client.Get(ctx, clientKey(web), web); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		want []string
	}{
		{"web.dns-test.svc.cluster.local.", []string{web.Spec.ClusterIP}},
		{"db.dns-test.svc.cluster.local.", []string{"10.132.0.7", "10.132.1.8"}},
		{"db-0.db.dns-test.svc.cluster.local.", []string{"10.132.0.7"}},
		{"10-132-1-8.db.dns-test.svc.cluster.local.", []string{"10.132.1.8"}},
		{"10-132-2-9.dns-test.pod.cluster.local.", []string{"10.132.2.9"}},
		{"example.test.", []string{"192.0.2.53"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, proto := range []string{"udp", "tcp"} {
				got, rcode := resolveA(t, proto, server, tc.name)
				if rcode != dns.RcodeSuccess || !slices.Equal(got, tc.want) {
					t.Errorf("%s A %s: rcode %s, %v; want %v", proto, tc.name, dns.RcodeToString[rcode], got, tc.want)
				}
			}
		})
	}
	if _, rcode := resolveA(t, "udp", server, "missing.dns-test.svc.cluster.local."); rcode != dns.RcodeNameError {
		t.Errorf("a Service that does not exist: rcode %s, want NXDOMAIN", dns.RcodeToString[rcode])
	}
	t.Logf("coredns RSS while serving: %d KiB", rssKiB(t, cmd.Process.Pid))

	// A changed Corefile is reloaded in the same process, which keeps
	// serving (the pod's ConfigMap is edited the same way).
	writeFile(t, corefile, corefileFor(startUpstream(t, "reloaded.test.", "192.0.2.54")))
	testenv.Eventually(t, 30*time.Second, "the new Corefile's upstream to answer", func() (bool, error) {
		select {
		case err := <-exited:
			t.Fatalf("coredns exited on reload: %v\n%s", err, logs.String())
		default:
		}
		got, _ := resolveA(t, "udp", server, "reloaded.test.")
		return slices.Equal(got, []string{"192.0.2.54"}), fmt.Errorf("reloaded.test. A %v", got)
	})
	if got, _ := resolveA(t, "tcp", server, "web.dns-test.svc.cluster.local."); !slices.Equal(got, []string{web.Spec.ClusterIP}) {
		t.Errorf("after the reload, web A %v, want %s", got, web.Spec.ClusterIP)
	}

	// SIGTERM stops the servers and ends the process cleanly.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("coredns after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("coredns did not stop within 10s of SIGTERM")
	}
}

// TestRefusesOtherPlugins: only the plugins of Directives are compiled in.
func TestRefusesOtherPlugins(t *testing.T) {
	corefile := filepath.Join(t.TempDir(), "Corefile")
	writeFile(t, corefile, fmt.Sprintf(".:%d {\n    whoami\n}\n", freePort(t)))
	out, err := exec.CommandContext(t.Context(), testenv.Binary(t), "component", "coredns", "-conf", corefile).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "whoami") {
		t.Fatalf("a Corefile with the whoami plugin: err %v, output %q; want a refusal naming whoami", err, out)
	}
}

func resolveA(t *testing.T, proto, server, name string) ([]string, int) {
	t.Helper()
	c := &dns.Client{Net: proto, Timeout: 5 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("%s A %s: %v", proto, name, err)
	}
	var ips []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	slices.Sort(ips)
	return ips, r.Rcode
}

// startUpstream serves name → ip on a loopback port and NXDOMAIN for every
// other name (the loop plugin's probe among them); it returns its address.
func startUpstream(t *testing.T, name, ip string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		if q := req.Question[0]; q.Name == name && q.Qtype == dns.TypeA {
			rr, _ := dns.NewRR(name + " 30 IN A " + ip)
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

// freePort is a port free for both TCP and UDP on loopback.
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = pc.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var kib int
		if _, err := fmt.Sscanf(s.Text(), "VmRSS: %d kB", &kib); err == nil {
			return kib
		}
	}
	return 0
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, env *testenv.Env, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }
