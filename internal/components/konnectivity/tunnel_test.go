package konnectivity_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	konnectivityclient "sigs.k8s.io/apiserver-network-proxy/konnectivity-client/pkg/client"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/components/konnectivity"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// TestTunnelCarriesTraffic runs the real Konnectivity server, as the
// control plane renders it, and agents, as the hosted cluster's nodes run
// them, from the hypershift binary under the process runtime; a real API
// server reviews the agents' tokens. Refused: an agent with a certificate
// of another cluster's CA, and agents of this cluster that claim an
// address not recorded for the node their token is bound to, use another
// node's name as their ID, or have no token. Once this cluster's agent is
// connected under its node, a dial through the server's unix socket, made
// as kube-apiserver makes it, reaches an HTTP server that only the agent
// can dial for it.
func TestTunnelCarriesTraffic(t *testing.T) {
	// A data dir so deep that the socket cannot sit in the server's
	// instance directory (the path would pass 99 bytes) moves it up.
	base := testenv.ShortTempDir(t)
	deep := filepath.Join(base, strings.Repeat("d", 97-len(base+"//clusters-tunnel/konnectivity.sock")))
	api := nodeAPI(t)
	for name, root := range map[string]string{"short data dir": testenv.ShortTempDir(t), "deep data dir": deep} {
		t.Run(name, func(t *testing.T) { testTunnel(t, root, api) })
	}
}

// agentAPI is an API server where the node n1 has 127.0.0.1 recorded, and
// a token bound to a konnectivity-agent pod on n1.
type agentAPI struct {
	kubeconfig string
	token      []byte
}

func nodeAPI(t *testing.T) agentAPI {
	t.Helper()
	env := testenv.Start(t)
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Labels, _ = bootstrap.AddressRecord(node, nil)
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := pki.KonnectivityAgentNamespace
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: pki.KonnectivityAgentServiceAccount}}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "konnectivity-agent-n1"},
		Spec: corev1.PodSpec{
			NodeName: "n1", ServiceAccountName: sa.Name, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "agent", Image: "hypershift"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{
		Audiences:      []string{pki.KonnectivityAudience},
		BoundObjectRef: &authv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return agentAPI{kubeconfig: datadir.Layout{Root: env.DataDir}.ManagementKubeconfig(), token: []byte(tr.Status.Token)}
}

func testTunnel(t *testing.T, root string, api agentAPI) {
	ctx := t.Context()
	rt, err := process.New(process.Options{Root: root, Binary: testenv.Binary(t), Log: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	ref := runtime.ControlPlaneRef{Namespace: "clusters-tunnel", Name: "tunnel"}
	t.Cleanup(func() { rt.StopAll(context.Background()) })

	opts := pki.ControlPlaneOptions{APIServerIPs: []net.IP{net.ParseIP("127.0.0.1")}, APIServerDNSNames: []string{"localhost"}}
	certs, err := pki.EnsureControlPlane(pki.FileStore{Dir: filepath.Join(root, "pki")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.EnsureControlPlane(pki.FileStore{Dir: filepath.Join(root, "other-pki")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	server, socket, agentPort := renderServer(ctx, t, rt, ref, certs)
	// The server reviews tokens at the test's API server.
	for i, a := range server.Args {
		if strings.HasPrefix(a, "--kubeconfig=") {
			server.Args[i] = "--kubeconfig=" + api.kubeconfig
		}
	}
	if len(socket) > 99 {
		t.Fatalf("socket path %s is %d bytes", socket, len(socket))
	}
	agentPorts, err := rt.Ports(ctx, ref, runtime.Named("good-health", "good-admin", "foreign-health", "foreign-admin",
		"impostor-health", "impostor-admin", "renamed-health", "renamed-admin", "tokenless-health", "tokenless-admin"))
	if err != nil {
		t.Fatal(err)
	}
	agent := func(name string, cert pki.KeyPair, id, idents string, token []byte) runtime.Spec {
		return agentSpec(name, agentPort, agentPorts[name+"-health"], agentPorts[name+"-admin"], certs.KonnectivityCA, cert, id, idents, token)
	}
	// The foreign agent trusts this server (it has this cluster's CA) but
	// presents a client certificate of another cluster's Konnectivity CA.
	// The others have this cluster's certificate: the impostor claims an
	// address not recorded for its node, the renamed one another node's
	// name, and the tokenless one has nothing to say which node it is.
	refused := []runtime.Spec{
		agent("foreign", other.KonnectivityAgent, "n1", "ipv4=127.0.0.1", api.token),
		agent("impostor", certs.KonnectivityAgent, "n1", "ipv4=127.0.0.2", api.token),
		agent("renamed", certs.KonnectivityAgent, "n2", "ipv4=127.0.0.1", api.token),
		agent("tokenless", certs.KonnectivityAgent, "n1", "ipv4=127.0.0.1", nil),
	}
	foreign := refused[0]
	if err := rt.Apply(ctx, ref, append([]runtime.Spec{server}, refused...)); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, rt, ref, server.Name, runtime.Running)

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "reached through the tunnel")
	}))
	t.Cleanup(backend.Close)
	backendAddr := backend.Listener.Addr().String()

	// Refused: the agent says so, the server has no agent, and nothing
	// reaches the backend.
	foreignLog := filepath.Join(rt.Dir(ref), foreign.Name, foreign.Name+".log")
	testenv.Eventually(t, time.Minute, "the foreign agent's refusal in its log", func() (bool, error) {
		data, err := os.ReadFile(foreignLog)
		refused := strings.Contains(string(data), "cannot connect once") && strings.Contains(string(data), "tls: unknown certificate authority")
		if refused {
			t.Logf("foreign agent: %s", lastLine(string(data)))
		}
		return refused, err
	})
	serverLog := filepath.Join(rt.Dir(ref), server.Name, server.Name+".log")
	for name, reason := range map[string]string{
		"impostor":  "node n1: identifier ipv4=127.0.0.2 is not an address recorded for the node (127.0.0.1)",
		"renamed":   `agent ID \"n2\" is not the name of its node \"n1\"`,
		"tokenless": "expected one Authorization, got 0",
	} {
		testenv.Eventually(t, time.Minute, "the server's refusal of the "+name+" agent", func() (bool, error) {
			data, err := os.ReadFile(serverLog)
			return strings.Contains(string(data), "Refused an agent") && strings.Contains(string(data), reason), err
		})
	}
	if code, body := get(ctx, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(server.Ports["health"]))+"/readyz"); code == http.StatusOK {
		t.Errorf("server ready with only refused agents: %s", body)
	}
	if _, err := tunnelGet(ctx, socket, backendAddr); err == nil {
		t.Error("a dial through the tunnel succeeded with only refused agents")
	}

	// This cluster's agent connects under its node, and the tunnel
	// carries traffic.
	good := agent("good", certs.KonnectivityAgent, "n1", "ipv4=127.0.0.1", api.token)
	if err := rt.Apply(ctx, ref, append([]runtime.Spec{server, good}, refused...)); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, rt, ref, good.Name, runtime.Running)
	var body string
	testenv.Eventually(t, time.Minute, "a request through the tunnel", func() (bool, error) {
		body, err = tunnelGet(ctx, socket, backendAddr)
		return err == nil, err
	})
	if body != "reached through the tunnel" {
		t.Errorf("body through the tunnel %q", body)
	}

	// Without the agent the same dial fails again: the agent, not the
	// server, reached the backend.
	if err := rt.Apply(ctx, ref, append([]runtime.Spec{server}, refused...)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "dials to fail once the agent is gone", func() (bool, error) {
		_, err := tunnelGet(ctx, socket, backendAddr)
		return err != nil, nil
	})
}

// renderServer renders a hosted control plane and returns its Konnectivity
// server, the server's unix socket and its agent port.
func renderServer(ctx context.Context, t *testing.T, rt *process.Runtime, ref runtime.ControlPlaneRef, certs *pki.ControlPlane) (runtime.Spec, string, int) {
	t.Helper()
	ports, err := rt.Ports(ctx, ref, components.PortRequest(components.PortNames(components.SingleReplica)))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := components.Render(components.Config{
		Name: ref.Namespace, Layout: rt.Layout(ref), PKI: certs, Ports: ports,
		EncryptionKey: make([]byte, 32), ServiceCIDR: "172.31.0.0/16", ClusterCIDR: "10.132.0.0/14", NodeCIDRMaskSize: 24,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Component != components.KonnectivityServer {
			continue
		}
		for _, a := range s.Args {
			if v, ok := strings.CutPrefix(a, "--uds-name="); ok {
				return s, v, ports[components.KonnectivityPort]
			}
		}
	}
	t.Fatalf("no %s with a unix socket among %d specs", components.KonnectivityServer, len(specs))
	return runtime.Spec{}, "", 0
}

// agentSpec is an agent as a node runs it, dialing the server on loopback,
// with the agent ID, identifiers and token (none when nil) given.
func agentSpec(name string, serverPort, health, admin int, ca, cert pki.KeyPair, id, idents string, token []byte) runtime.Spec {
	files := []runtime.File{
		{Path: "ca.crt", Content: ca.CertPEM},
		{Path: "tls.crt", Content: cert.CertPEM},
		{Path: "tls.key", Content: cert.KeyPEM, Secret: true},
	}
	args := []string{
		"--proxy-server-host=127.0.0.1",
		"--proxy-server-port=" + strconv.Itoa(serverPort),
		"--ca-cert=ca.crt", "--agent-cert=tls.crt", "--agent-key=tls.key",
		"--health-server-host=127.0.0.1", "--health-server-port=" + strconv.Itoa(health),
		"--admin-bind-address=127.0.0.1", "--admin-server-port=" + strconv.Itoa(admin),
		"--agent-id=" + id, "--agent-identifiers=" + idents,
		"--sync-interval=200ms", "--sync-interval-cap=1s",
	}
	if token != nil {
		files = append(files, runtime.File{Path: "token", Content: token, Secret: true})
		args = append(args, "--service-account-token-path=token")
	}
	return runtime.Spec{
		Name:      name,
		Component: konnectivity.Agent,
		Args:      args,
		Files:     files,
		Ports:     map[string]int{"health": health, "admin": admin},
		Readiness: runtime.Probe{Scheme: "http", Port: health, Path: "/healthz"},
	}
}

// tunnelGet GETs http://addr/ through the Konnectivity server's unix
// socket, with a single-use gRPC tunnel as kube-apiserver's egress
// selector opens one.
func tunnelGet(ctx context.Context, socket, addr string) (string, error) {
	dial := func(ctx context.Context, _, addr string) (net.Conn, error) {
		tunnel, err := konnectivityclient.CreateSingleUseGrpcTunnel(ctx, socket,
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			}),
			grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		return tunnel.DialContext(ctx, "tcp", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func waitPhase(t *testing.T, rt *process.Runtime, ref runtime.ControlPlaneRef, name string, phase runtime.Phase) {
	t.Helper()
	testenv.Eventually(t, time.Minute, name+" "+string(phase), func() (bool, error) {
		for _, s := range rt.Status(ref) {
			if s.Name == name {
				return s.Phase == phase, fmt.Errorf("%s is %s: %s", name, s.Phase, s.Message)
			}
		}
		return false, fmt.Errorf("%s has no status", name)
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
