// Package e2e drives the hypershift binary and a stock kubectl the way a
// user does, against real control planes on this machine.
package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/version"
)

// TestHostedClusters is the user's journey of the core: a management plane,
// two isolated hosted clusters used with kubectl, bad input, destroy, and
// the management plane going down and coming back.
func TestHostedClusters(t *testing.T) {
	ownDirAndPorts(t)
	hs := newCLI(t)
	// The default metrics address taken, as by another management plane on
	// this host: up moves to a free port and says which.
	const defaultMetrics = "127.0.0.1:8383"
	if l, err := net.Listen("tcp", defaultMetrics); err == nil {
		t.Cleanup(func() { _ = l.Close() })
	}
	upOut := hs.must("up", "--detach")
	t.Cleanup(func() { hs.run("down", "--purge") })
	m := regexp.MustCompile(regexp.QuoteMeta(defaultMetrics) + ` is in use .*: --metrics-bind-address 127\.0\.0\.1:(\d+)`).FindStringSubmatch(upOut)
	if m == nil {
		t.Fatalf("up with %s taken does not say which metrics address it uses instead:\n%s", defaultMetrics, upOut)
	}
	metricsPort, _ := strconv.Atoi(m[1])
	t.Run("a second up given a taken metrics address is refused before it makes anything", func(t *testing.T) {
		second := newCLI(t)
		taken := fmt.Sprintf("127.0.0.1:%d", metricsPort)
		if stderr := second.fails("up", "--detach", "--metrics-bind-address", taken); !strings.Contains(stderr, "--metrics-bind-address "+taken+": the address is in use") {
			t.Errorf("up with a taken --metrics-bind-address printed %q, want the flag and the address named", stderr)
		}
		if entries, _ := os.ReadDir(second.dataDir); len(entries) > 0 {
			t.Errorf("the refused up made %d entries in its data dir", len(entries))
		}
		// The same (empty) data dir, up in the foreground: it is ready,
		// and SIGTERM stops it.
		upForegroundUntilReady(t, second)
	})
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	if info, err := os.Stat(mgmt); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("management kubeconfig: %v (mode %v), want mode 0600", err, info.Mode().Perm())
	}

	out := hs.must("create", "cluster", "none", "--name", "a", "--wait", "--timeout", "3m")
	for _, step := range []string{"EtcdAvailable=True", "KubeAPIServerAvailable=True", "Available=True", "ClusterVersionProgressing=True: Installing " + version.KubernetesVersion + ": "} {
		if !strings.Contains(out, step) {
			t.Errorf("--wait output lacks the step %q:\n%s", step, out)
		}
	}
	if strings.Contains(out, "Upgrading") || strings.Contains(out, "Rolling") {
		t.Errorf("a creation reports an upgrade:\n%s", out)
	}
	hs.must("create", "cluster", "none", "--name", "b", "--wait", "--timeout", "3m")

	akc := filepath.Join(hs.dataDir, "a.kubeconfig")
	writeFile(t, akc, hs.must("create", "kubeconfig", "--name", "a"))
	bkc := filepath.Join(hs.dataDir, "b.kubeconfig")
	// An existing world-readable file does not keep its mode: the admin
	// key inside is for the owner only.
	if err := os.WriteFile(bkc, []byte("old"), 0o644); err != nil { // the loose mode is the point
		t.Fatal(err)
	}
	hs.must("create", "kubeconfig", "--name", "b", "-o", bkc)
	if info, err := os.Stat(bkc); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("create kubeconfig -o over a 0644 file: %v (mode %v), want mode 0600", err, info.Mode().Perm())
	}

	t.Run("kubectl uses a hosted cluster", func(t *testing.T) {
		mustKubectl(t, akc, "create", "namespace", "x")
		v := mustKubectl(t, akc, "get", "--raw", "/version")
		if !strings.Contains(v, `"gitVersion": "`+version.KubernetesVersion+`"`) {
			t.Errorf("/version does not report %s:\n%s", version.KubernetesVersion, v)
		}
		mustKubectl(t, bkc, "create", "namespace", "only-b")
	})

	t.Run("clusters are isolated", func(t *testing.T) {
		a, b := loadKubeconfig(t, akc), loadKubeconfig(t, bkc)
		if string(a.ca) == string(b.ca) {
			t.Error("clusters a and b share a CA")
		}
		if code := statusWithClientCert(t, b.server, b.ca, a.cert, a.key); code != http.StatusUnauthorized {
			t.Errorf("a's admin credentials on b's API server: HTTP %d, want 401", code)
		}
		if out, err := kubectl(t, bkc, "get", "namespace", "x"); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("a's namespace visible from b: %v\n%s", err, out)
		}
		etcds := 0
		for name := range pidsUnder(t, hs.dataDir+"/clusters/") {
			if strings.HasPrefix(name, "etcd#") {
				etcds++
			}
		}
		if etcds != 2 {
			t.Errorf("%d etcd processes for two clusters, want one each", etcds)
		}
	})

	t.Run("secrets are encrypted at rest", func(t *testing.T) {
		mustKubectl(t, akc, "-n", "x", "create", "secret", "generic", "s", "--from-literal=v=plaintext-secret-7f3a9c")
		mustKubectl(t, akc, "-n", "x", "create", "configmap", "c", "--from-literal=v=plaintext-configmap-7f3a9c")
		data := filepath.Join(hs.dataDir, "clusters", "clusters-a", "etcd-0", "data")
		if !dirContains(t, data, "plaintext-configmap-7f3a9c") {
			t.Fatal("the ConfigMap's value is not found in etcd's files: the scan does not work")
		}
		if dirContains(t, data, "plaintext-secret-7f3a9c") {
			t.Error("the Secret's value is readable as plain text in etcd's files")
		}
		if !dirContains(t, data, "k8s:enc:secretbox:v1:key1") {
			t.Error("no secretbox-encrypted value in etcd's files")
		}
		if got := mustKubectl(t, akc, "-n", "x", "get", "secret", "s", "-o", "jsonpath={.data.v}"); got != "cGxhaW50ZXh0LXNlY3JldC03ZjNhOWM=" {
			t.Errorf("the Secret reads back as %q", got)
		}
		audit := filepath.Join(hs.dataDir, "clusters", "clusters-a", "kube-apiserver", "audit.log")
		if !dirContains(t, filepath.Dir(audit), `"resource":"secrets"`) {
			t.Error("the audit log does not record the Secret's creation")
		}
		if dirContains(t, filepath.Dir(audit), "plaintext-secret-7f3a9c") {
			t.Error("the audit log or API server files hold the Secret's value")
		}
	})

	t.Run("get, describe and metrics", func(t *testing.T) {
		// --wait ends at Available; the version column fills once the
		// controller manager and scheduler run it too, moments later.
		eventually(t, time.Minute, "get clusters to show a and b available at "+version.KubernetesVersion, func() error {
			list := hs.must("get", "clusters")
			for _, name := range []string{"a", "b"} {
				if !strings.Contains(list, "clusters    "+name+"      "+version.KubernetesVersion+"   True") {
					return fmt.Errorf("%s is not shown available at %s:\n%s", name, version.KubernetesVersion, list)
				}
			}
			return nil
		})
		desc := hs.must("describe", "cluster", "a")
		for _, want := range []string{"Control plane namespace:  clusters-a", "kube-apiserver", "Running", "Available=True"} {
			if !strings.Contains(desc, want) {
				t.Errorf("describe lacks %q:\n%s", want, desc)
			}
		}
		metrics := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		for _, want := range []string{
			`hypershift_hostedclusters{condition="Available",status="True"} 2`,
			`hypershift_hostedcluster_create_to_available_seconds_count 2`,
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
	})

	t.Run("nothing listens on every interface", func(t *testing.T) {
		if found := wildcardListeners(t, hs.dataDir+"/"); len(found) > 0 {
			t.Errorf("listeners on every interface:\n%s", strings.Join(found, "\n"))
		}
	})

	t.Run("bad input is rejected plainly", func(t *testing.T) {
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"create", "cluster", "none", "--name", "a.b"}, "metadata.name must be a DNS-1123 label"},
			{[]string{"create", "cluster", "none", "--name", "c", "--service-cidr", "10.132.0.0/16"}, "spec.networking.serviceNetwork must not overlap spec.networking.clusterNetwork"},
			{[]string{"create", "cluster", "none", "--name", "c", "--kubernetes-version", "v1.20"}, "spec.kubernetesVersion must be a Kubernetes version vMAJOR.MINOR.PATCH"},
			{[]string{"create", "cluster", "none", "--name", "a"}, "already exists"},
			{[]string{"create", "cluster", "gcp", "--name", "c"}, `unknown platform "gcp": use none, simulated, host, kubevirt, aws or azure`},
			{[]string{"create", "kubeconfig", "--name", "nope"}, "hosted cluster clusters/nope not found"},
			// Validated as a whole before anything is created.
			{[]string{"create", "cluster", "none", "--name", "y", "--node-pool-replicas", "-3"}, "spec.replicas"},
			{[]string{"create", "cluster", "simulated", "--name", "y", "-n", "fresh", "--node-pool-replicas", "-3"}, "spec.replicas"},
		}
		for _, c := range cases {
			if stderr := hs.fails(c.args...); !strings.Contains(stderr, c.want) {
				t.Errorf("hypershift %s: stderr %q, want %q", strings.Join(c.args, " "), stderr, c.want)
			}
		}
		out, err := kubectl(t, mgmt, "-n", "clusters", "patch", "hostedcluster", "a", "--type=merge", "-p", `{"spec":{"platform":{"type":"Simulated"}}}`)
		if err == nil || !strings.Contains(out, "spec.platform.type is immutable") {
			t.Errorf("changing the platform: %v\n%s", err, out)
		}
		if list := hs.must("get", "clusters"); regexpMatch(list, `(?m)^\S+\s+y\s`) {
			t.Errorf("a rejected create left hosted cluster y behind:\n%s", list)
		}
		eventually(t, 30*time.Second, "the namespace of a rejected create removed", func() error {
			if out, err := kubectl(t, mgmt, "get", "namespace", "fresh"); err == nil || !strings.Contains(out, "NotFound") {
				return fmt.Errorf("namespace fresh: %w %s", err, out)
			}
			return nil
		})
		other := &cli{t: t, bin: hs.bin, dataDir: t.TempDir()}
		if stderr := other.fails("get", "clusters"); !strings.Contains(stderr, "no management plane found: run `hypershift up` or pass --kubeconfig") {
			t.Errorf("without a management plane: %q", stderr)
		}
	})

	t.Run("the command line has only its own flags", func(t *testing.T) {
		if help := hs.must("--help"); strings.Contains(help, "--version") {
			t.Errorf("hypershift --help lists a component's --version flag:\n%s", help)
		}
		out, err := exec.Command(hs.bin, "component", "kube-apiserver", "--version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Kubernetes "+version.KubernetesVersion) {
			t.Errorf("component kube-apiserver --version: %v, printed %q", err, out)
		}
	})

	t.Run("a data dir belongs to one process and only data dirs are purged", func(t *testing.T) {
		stderr := hs.fails("operator", "--kubeconfig", mgmt, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		if want := fmt.Sprintf("is in use by pid %d", upPID(t, hs.dataDir)); !strings.Contains(stderr, want) {
			t.Errorf("a second process on the data dir: %q, want it refused naming the holder (%q)", stderr, want)
		}
		foreign := t.TempDir()
		writeFile(t, filepath.Join(foreign, "keep"), "x")
		other := &cli{t: t, bin: hs.bin, dataDir: foreign}
		if stderr := other.fails("down", "--purge"); !strings.Contains(stderr, "is not a hypershift data dir") {
			t.Errorf("down --purge of a foreign directory: %q", stderr)
		}
		if _, err := os.Stat(filepath.Join(foreign, "keep")); err != nil {
			t.Errorf("down --purge removed a directory hypershift did not make: %v", err)
		}
	})

	t.Run("destroy removes everything of one cluster only", func(t *testing.T) {
		aDir := filepath.Join(hs.dataDir, "clusters", "clusters-a")
		if len(pidsUnder(t, aDir+"/")) == 0 {
			t.Fatal("no process of cluster a found before destroy")
		}
		hs.must("destroy", "cluster", "--name", "a", "--wait")
		if left := pidsUnder(t, aDir+"/"); len(left) > 0 {
			t.Errorf("processes of a left after destroy: %v", left)
		}
		if _, err := os.Stat(aDir); !os.IsNotExist(err) {
			t.Errorf("data dir of a left after destroy: %v", err)
		}
		if out, err := kubectl(t, mgmt, "get", "namespace", "clusters-a"); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("namespace clusters-a left after destroy: %v\n%s", err, out)
		}
		mustKubectl(t, bkc, "get", "namespace", "only-b")
	})

	t.Run("hosted API outlives the management plane", func(t *testing.T) {
		bDir := filepath.Join(hs.dataDir, "clusters", "clusters-b") + "/"
		before := pidsUnder(t, bDir)
		pid := upPID(t, hs.dataDir)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		for i := range 10 {
			if _, err := kubectl(t, bkc, "get", "namespace", "only-b"); err != nil {
				t.Fatalf("request %d to b failed with the management plane dead: %v", i, err)
			}
		}
		hs.must("up", "--detach", "--metrics-bind-address", "0")
		eventually(t, time.Minute, "b Available after up", func() error {
			if !strings.Contains(hs.must("get", "clusters"), "True") {
				return errorf("b not available")
			}
			return nil
		})
		time.Sleep(3 * time.Second) // a few supervision rounds
		after := pidsUnder(t, bDir)
		for name := range before {
			if _, ok := after[name]; !ok {
				t.Errorf("process %s was replaced after the management plane came back (before %v, after %v)", name, before, after)
			}
		}
	})

	t.Run("down and up keep clusters and their objects", func(t *testing.T) {
		hs.must("down")
		if left := pidsUnder(t, hs.dataDir+"/"); len(left) > 0 {
			t.Fatalf("processes left after down: %v", left)
		}
		hs.must("up", "--detach", "--metrics-bind-address", "0")
		eventually(t, 2*time.Minute, "b Available after up", func() error {
			_, err := kubectl(t, bkc, "get", "namespace", "only-b")
			return err
		})
		if !strings.Contains(hs.must("get", "clusters"), "True") {
			t.Error("b not reported Available after down and up")
		}
	})
}

type kubeconfigData struct {
	server        string
	ca, cert, key []byte
}

func loadKubeconfig(t *testing.T, path string) kubeconfigData {
	t.Helper()
	cfg := restConfig(t, path)
	return kubeconfigData{server: cfg.Host, ca: cfg.CAData, cert: cfg.CertData, key: cfg.KeyData}
}

func statusWithClientCert(t *testing.T, server string, ca, cert, key []byte) int {
	t.Helper()
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	}}
	resp, err := client.Get(server + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func upPID(t *testing.T, dataDir string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dataDir, "up.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscanf(strings.TrimPrefix(string(raw), `{"pid":`), "%d", &pid); err != nil {
		t.Fatalf("parse up.pid %q: %v", raw, err)
	}
	return pid
}

// TestEndpointHostAddress: with a routable --endpoint-host, hosted API
// servers (and their HA proxy) listen on that address — other hosts' nodes
// reach it — and still on no other interface; the control plane's own
// components reach their API server there too.
func TestEndpointHostAddress(t *testing.T) {
	ownDirAndPorts(t)
	ip := hostnet.HostIPv4()
	if ip == nil {
		t.Skip("this host has no non-loopback IPv4 address")
	}
	hs := upCLI(t, "--endpoint-host", ip.String())
	for _, name := range []string{"e", "eha"} {
		args := []string{"create", "cluster", "none", "--name", name, "--wait", "--timeout", "4m"}
		if name == "eha" {
			args = append(args, "--availability-policy", "HighlyAvailable")
		}
		hs.must(args...)
		waitAllRunning(t, hs, name)
		kc := hs.adminKubeconfig(name)
		server := loadKubeconfig(t, kc).server
		if !strings.HasPrefix(server, "https://"+ip.String()+":") {
			t.Errorf("%s: kubeconfig server %s, want the endpoint host %s", name, server, ip)
		}
		mustKubectl(t, kc, "get", "--raw", "/readyz")
		// Published on the endpoint host only: not on loopback.
		port := strings.TrimPrefix(server, "https://"+ip.String()+":")
		if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s: the API endpoint answers on 127.0.0.1:%s too, want only %s", name, port, ip)
		}
	}
	if found := wildcardListeners(t, hs.dataDir+"/"); len(found) > 0 {
		t.Errorf("listeners on every interface:\n%s", strings.Join(found, "\n"))
	}
}

// upForegroundUntilReady runs `up` in the foreground on c's data dir until
// it says ready, then stops it with SIGTERM (it exits 0) and purges the
// data dir.
func upForegroundUntilReady(t *testing.T, c *cli) {
	t.Helper()
	cmd := exec.Command(c.bin, "--data-dir", c.dataDir, "up", "--metrics-bind-address", "0")
	cmd.Env = withoutKubeconfig()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.run("down", "--purge") })
	ready, eof := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(eof)
		var seen strings.Builder
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "management plane ready") {
				ready <- seen.String()
			}
		}
	}()
	select {
	case out := <-ready:
		t.Logf("up in the foreground: %s", strings.TrimSpace(out))
		_ = cmd.Process.Signal(syscall.SIGTERM)
	case <-eof:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Errorf("up in the foreground on a new data dir: not ready within 2m")
	}
	select {
	case <-eof:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-eof
		t.Errorf("up in the foreground did not stop within 1m of SIGTERM")
	}
	err = cmd.Wait()
	spawns.add("hypershift", cmd)
	if err != nil {
		t.Errorf("up in the foreground on a new data dir: %v\n%s", err, stderr.String())
	}
}
