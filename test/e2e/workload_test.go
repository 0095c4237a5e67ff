package e2e

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/testenv"
)

// workloadImage is the tests' workload image (testdata/hello): loaded on
// nodes with `hypershift node load-image`, used with imagePullPolicy Never.
const workloadImage = "hypershift.test/hello:1"

// buildHello compiles testdata/hello as a static binary, once for the
// package (the tests only run it, or copy it into an image).
func buildHello(t *testing.T) string {
	t.Helper()
	helloBinary.once.Do(func() {
		helloBinary.path = filepath.Join(packageTempDir, "hello")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", helloBinary.path, "./testdata/hello")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			helloBinary.err = fmt.Errorf("build the test workload: %w\n%s", err, out)
		}
	})
	if helloBinary.err != nil {
		t.Fatal(helloBinary.err)
	}
	return helloBinary.path
}

var helloBinary struct {
	once sync.Once
	path string
	err  error
}

// buildHelloImage compiles testdata/hello and writes it as a one-layer
// image tarball (go-containerregistry, tag workloadImage).
func buildHelloImage(t *testing.T) string {
	t.Helper()
	prog, err := os.ReadFile(buildHello(t))
	if err != nil {
		t.Fatal(err)
	}
	tarPath := filepath.Join(t.TempDir(), "hello.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := join.WriteImage(f, workloadImage, map[string][]byte{"hello": prog}, []string{"/hello"}); err != nil {
		t.Fatal(err)
	}
	return tarPath
}

// helloDeployment is the Deployment hello of the test workload, its
// replicas spread one per node, ready once it answers HTTP on 8080.
func helloDeployment(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: %d
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
        image: %s
        imagePullPolicy: Never
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 1
`, replicas, workloadImage)
}

// testPKI is a CA and one serving certificate it signed, PEM-encoded.
type testPKI struct{ caPEM, certPEM, keyPEM []byte }

// newTestPKI makes a CA and a serving certificate for the DNS names and IP
// addresses given (a webhook Service's names, or 127.0.0.1).
func newTestPKI(t *testing.T, dnsNames []string, ips ...net.IP) testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hypershift e2e CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "hypershift e2e server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: dnsNames, IPAddresses: ips,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testPKI{
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// TestWorkloadModes runs each part the workload plays on the node, here
// on the host: so a failure on a node is the node's, not the program's.
func TestWorkloadModes(t *testing.T) {
	ownDirAndPorts(t)
	hello := buildHello(t)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(hello, args...).CombinedOutput()
		return string(out), err
	}

	t.Run("echo, serve, resolve", func(t *testing.T) {
		if out, err := run("exec", "works"); err != nil || out != "exec works\n" {
			t.Errorf("hello exec works: %q, %v", out, err)
		}
		port := testenv.FreePort(t)
		startProcess(t, hello, "serve", "-listen", fmt.Sprintf("127.0.0.1:%d", port))
		host, _ := os.Hostname()
		eventually(t, 10*time.Second, "hello serve answers", func() error {
			out, err := run("get", fmt.Sprintf("http://127.0.0.1:%d/", port))
			if err != nil || out != "HTTP 200 hello from "+host+"\n" {
				return fmt.Errorf("hello get: %s", outcome(out, err))
			}
			return nil
		})
		if out, err := run("resolve", "localhost"); err != nil || !strings.Contains(out, "127.0.0.1\n") {
			t.Errorf("hello resolve localhost: %q, %v", out, err)
		}
		if out, err := run("resolve", "no-such-name.invalid."); err == nil {
			t.Errorf("hello resolve of a name that does not exist succeeded: %q", out)
		}
	})

	t.Run("get opens a new connection per request and fails on errors", func(t *testing.T) {
		var conns atomic.Int32
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hi") }))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
		srv.Start()
		defer srv.Close()
		out, err := run("get", "-n", "3", srv.URL)
		if err != nil || out != strings.Repeat("HTTP 200 hi\n", 3) {
			t.Errorf("hello get -n 3: %q, %v", out, err)
		}
		if n := conns.Load(); n != 3 {
			t.Errorf("3 requests used %d connections, want 3 (a Service picks a backend per connection)", n)
		}
		if out, err := run("get", fmt.Sprintf("http://127.0.0.1:%d/", testenv.FreePort(t))); err == nil || !strings.HasPrefix(out, "ERROR ") {
			t.Errorf("hello get of a closed port: %q, %v; want an ERROR line and a failure", out, err)
		}
	})

	t.Run("api sends the service-account token and trusts only its CA", func(t *testing.T) {
		pki := newTestPKI(t, nil, net.ParseIP("127.0.0.1"))
		pair, err := tls.X509KeyPair(pki.certPEM, pki.keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer sa-token" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
		}))
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
		srv.StartTLS()
		defer srv.Close()
		sa := t.TempDir()
		writeFile(t, filepath.Join(sa, "token"), "sa-token\n")
		writeFile(t, filepath.Join(sa, "ca.crt"), string(pki.caPEM))
		if out, err := run("api", "-server", srv.URL, "-sa", sa, "/api"); err != nil || out != "HTTP 200\n{\"path\":\"/api\"}\n" {
			t.Errorf("hello api /api: %q, %v", out, err)
		}
		writeFile(t, filepath.Join(sa, "ca.crt"), string(newTestPKI(t, nil).caPEM))
		if out, err := run("api", "-server", srv.URL, "-sa", sa, "/api"); err == nil || !strings.Contains(out, "certificate signed by unknown authority") {
			t.Errorf("hello api with another CA: %q, %v; want the server refused", out, err)
		}
	})

	t.Run("webhook denies what is labelled deny and admits the rest", func(t *testing.T) {
		pki := newTestPKI(t, nil, net.ParseIP("127.0.0.1"))
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "tls.crt"), string(pki.certPEM))
		writeFile(t, filepath.Join(dir, "tls.key"), string(pki.keyPEM))
		port := testenv.FreePort(t)
		logs := startProcess(t, hello, "webhook", "-listen", fmt.Sprintf("127.0.0.1:%d", port), "-cert", filepath.Join(dir, "tls.crt"), "-key", filepath.Join(dir, "tls.key"))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pki.caPEM)
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		url := fmt.Sprintf("https://127.0.0.1:%d/validate", port)
		eventually(t, 10*time.Second, "the webhook serves TLS", func() error {
			resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz", port))
			if err == nil {
				resp.Body.Close()
			}
			return err
		})
		cases := []struct {
			name, label string
			allowed     bool
			message     string
		}{
			{"keep", "allow", true, ""},
			{"unlabelled", "", true, ""},
			{"drop", "deny", false, "denied by the e2e webhook: ConfigMap default/drop is labelled e2e.hypershift.dev/webhook=deny"},
		}
		for _, c := range cases {
			labels := map[string]string{}
			if c.label != "" {
				labels["e2e.hypershift.dev/webhook"] = c.label
			}
			req, _ := json.Marshal(map[string]any{
				"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
				"request": map[string]any{
					"uid": "uid-" + c.name, "kind": map[string]string{"group": "", "version": "v1", "kind": "ConfigMap"},
					"namespace": "default", "name": c.name, "operation": "CREATE",
					"object": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": c.name, "labels": labels}},
				},
			})
			resp, err := client.Post(url, "application/json", bytes.NewReader(req))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var got struct {
				APIVersion, Kind string
				Response         struct {
					UID     string
					Allowed bool
					Status  struct {
						Code    int
						Message string
					}
				}
			}
			if err := json.Unmarshal(body, &got); err != nil || got.APIVersion != "admission.k8s.io/v1" || got.Kind != "AdmissionReview" {
				t.Fatalf("%s: answer %s (%v), want an admission.k8s.io/v1 AdmissionReview", c.name, body, err)
			}
			r := got.Response
			if r.UID != "uid-"+c.name || r.Allowed != c.allowed || r.Status.Message != c.message || (!c.allowed && r.Status.Code != http.StatusForbidden) {
				t.Errorf("%s: response %+v, want uid-%s allowed=%v message %q", c.name, r, c.name, c.allowed, c.message)
			}
		}
		resp, err := client.Post(url, "application/json", strings.NewReader(`{"kind":"AdmissionReview"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a review without a request: HTTP %d, want 400", resp.StatusCode)
		}
		eventually(t, 5*time.Second, "the webhook logs its decisions", func() error {
			if out := logs(); !strings.Contains(out, "webhook: allowed ConfigMap default/keep\n") || !strings.Contains(out, "webhook: denied by the e2e webhook: ConfigMap default/drop") {
				return fmt.Errorf("webhook output:\n%s", out)
			}
			return nil
		})
	})
}

// startProcess starts a program that runs until the test ends and returns
// a function reading what it printed so far.
func startProcess(t *testing.T, name string, args ...string) func() string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var mu sync.Mutex
	var out bytes.Buffer
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done; _ = cmd.Wait() })
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		return out.String()
	}
}
