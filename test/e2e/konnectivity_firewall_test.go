package e2e

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/testenv"
)

// kubeletPort is the kubelet's port on a joined node (join's default).
const kubeletPort = "10250"

// TestKonnectivityOneWayFirewall: a node that the control plane cannot
// dial — it sits in a network namespace whose firewall drops every new
// connection from the host side, like a node behind NAT — still serves
// everything the API server needs from it, through the Konnectivity agent
// it dials out with: `kubectl logs`, `exec`, `port-forward`, and an
// admission webhook served by a pod on it.
func TestKonnectivityOneWayFirewall(t *testing.T) {
	wholeHost(t)
	requireRealNode(t)
	ns := newNetns(t)
	ns.dropInbound(t)
	probe := net.JoinHostPort(ns.nsIP.String(), fmt.Sprint(testenv.FreePort(t)))
	ns.listenGreeting(t, probe, "from the namespace")
	checkDropped(t, probe, "a port served in the namespace")
	if got, err := readGreeting(ns.dialFromNetns(net.JoinHostPort(ns.hostIP.String(), "1"))); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("from the namespace to the host side's closed port 1: %q, %v; want refused (the host answers outbound connections)", got, err)
	}
	if t.Failed() {
		t.FailNow()
	}

	hs := upCLI(t, "--endpoint-host", ns.hostIP.String())
	joinArgs := joinCommandArgs(t, hs.must("create", "cluster", "none", "--name", "k", "--wait", "--timeout", "3m"))
	if server := flagValue(t, joinArgs, "--server"); !strings.HasPrefix(server, "https://"+ns.hostIP.String()+":") {
		t.Fatalf("the join command's --server is %s, want the endpoint host %s", server, ns.hostIP)
	}
	kc := hs.adminKubeconfig("k")
	image := buildHelloImage(t)

	nodeDir := filepath.Join(shortTempDir(t), "node")
	t.Cleanup(func() {
		if _, err := os.Stat(nodeDir); err != nil {
			return
		}
		if r := ns.hypershift(hs, "join", "--reset", "--node-dir", nodeDir); r.err != nil {
			t.Errorf("join --reset in the namespace: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
		}
	})
	t.Cleanup(func() { dumpOnFailure(t, hs, "k", kc, nodeDir) })

	start := time.Now()
	r := ns.hypershift(hs, append(append([]string(nil), joinArgs...), "--node-dir", nodeDir)...)
	if r.err != nil {
		t.Fatalf("join in the namespace: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
	}
	node := parseJoin(t, r.stdout)
	if !node.ip.Equal(ns.nsIP) {
		t.Fatalf("the node joined with address %s, want the namespace's %s", node.ip, ns.nsIP)
	}
	// The API server cannot reach the kubelet directly.
	checkDropped(t, net.JoinHostPort(node.ip.String(), kubeletPort), "the kubelet's port after the join")
	hs.must("node", "load-image", image, "--node-dir", nodeDir)

	eventually(t, 2*time.Minute, "DaemonSet kube-system/konnectivity-agent ready on the node", func() error {
		out, err := kubectl(t, kc, "-n", "kube-system", "get", "daemonset", "konnectivity-agent", "-o", "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}")
		if err != nil || out != "1/1" {
			return fmt.Errorf("ready/desired: %s", outcome(out, err))
		}
		return nil
	})

	// No comma in a subtest's name: it reaches t.TempDir, and kubectl -f
	// splits paths at commas.
	t.Run("kubectl logs exec and port-forward", func(t *testing.T) {
		pod := filepath.Join(t.TempDir(), "echo.yaml")
		writeFile(t, pod, `apiVersion: v1
kind: Pod
metadata:
  name: echo
spec:
  containers:
  - name: echo
    image: hypershift.test/hello:1
    imagePullPolicy: Never
`)
		mustKubectl(t, kc, "apply", "-f", pod)
		mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/echo", "--timeout=120s")
		eventually(t, time.Minute, "kubectl logs echo through the tunnel", func() error {
			if out, err := kubectl(t, kc, "logs", "echo"); err != nil || !strings.Contains(out, "hello from echo") {
				return fmt.Errorf("kubectl logs echo: %s", outcome(out, err))
			}
			return nil
		})
		t.Logf("join start → kubectl logs through the tunnel: %.1fs", time.Since(start).Seconds())
		if out, err := kubectl(t, kc, "exec", "echo", "--", "/hello", "exec", "works"); err != nil || strings.TrimSpace(out) != "exec works" {
			t.Errorf("kubectl exec echo -- /hello exec works: %v\n%s", err, out)
		}
		if body, err := portForwardGet(t, kc, "pod/echo", 8080); err != nil || body != "hello from echo\n" {
			t.Errorf("GET through kubectl port-forward pod/echo: %q, %v", body, err)
		}
	})

	t.Run("a webhook served on the node rejects and admits", func(t *testing.T) {
		checkWebhook(t, kc)
	})
}

// portForwardGet runs `kubectl port-forward` to a pod's port and GETs /
// through it.
func portForwardGet(t *testing.T, kc, target string, port int) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectlPath(t), "--kubeconfig", kc, "port-forward", target, fmt.Sprintf(":%d", port))
	cmd.Env = withoutKubeconfig()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	local := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(fmt.Sprintf(`Forwarding from 127\.0\.0\.1:(\d+) -> %d`, port))
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				local <- m[1]
			}
		}
		close(local)
	}()
	var localPort string
	select {
	case p, ok := <-local:
		if !ok {
			return "", fmt.Errorf("kubectl port-forward %s exited: %s", target, stderr.String())
		}
		localPort = p
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("kubectl port-forward %s printed no local port in 30s: %s", target, stderr.String())
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://127.0.0.1:" + localPort + "/")
	if err != nil {
		return "", fmt.Errorf("%w (kubectl port-forward said: %s)", err, stderr.String())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// checkWebhook runs the workload as a validating admission webhook on the
// node behind a Service, registers it for test-labelled ConfigMaps, and
// checks that the API server gets its answers: a ConfigMap labelled deny
// is refused with the webhook's message, one labelled allow is created
// and the webhook logged that it was asked.
func checkWebhook(t *testing.T, kc string) {
	pki := newTestPKI(t, []string{"wh.default.svc", "wh.default.svc.cluster.local"})
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tls.crt"), string(pki.certPEM))
	writeFile(t, filepath.Join(dir, "tls.key"), string(pki.keyPEM))
	mustKubectl(t, kc, "create", "secret", "tls", "wh-tls", "--cert", filepath.Join(dir, "tls.crt"), "--key", filepath.Join(dir, "tls.key"))
	manifest := filepath.Join(dir, "webhook.yaml")
	writeFile(t, manifest, `apiVersion: v1
kind: Pod
metadata:
  name: wh
  labels: {app: wh}
spec:
  containers:
  - name: wh
    image: hypershift.test/hello:1
    imagePullPolicy: Never
    args: [webhook, -listen, ":8443", -cert, /tls/tls.crt, -key, /tls/tls.key]
    readinessProbe:
      httpGet: {scheme: HTTPS, path: /healthz, port: 8443}
      periodSeconds: 1
    volumeMounts: [{name: tls, mountPath: /tls, readOnly: true}]
  volumes:
  - name: tls
    secret: {secretName: wh-tls}
---
apiVersion: v1
kind: Service
metadata:
  name: wh
spec:
  selector: {app: wh}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: e2e-webhook
webhooks:
- name: configmaps.e2e.hypershift.dev
  clientConfig:
    service: {namespace: default, name: wh, path: /validate, port: 443}
    caBundle: `+base64.StdEncoding.EncodeToString(pki.caPEM)+`
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  objectSelector:
    matchExpressions: [{key: e2e.hypershift.dev/webhook, operator: Exists}]
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 10
`)
	mustKubectl(t, kc, "apply", "-f", manifest)
	mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/wh", "--timeout=120s")

	configMap := func(name, verdict string) string {
		path := filepath.Join(dir, name+".yaml")
		writeFile(t, path, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  labels: {e2e.hypershift.dev/webhook: %s}\n", name, verdict))
		return path
	}
	deny, allow := configMap("wh-deny", "deny"), configMap("wh-allow", "allow")
	want := "denied by the e2e webhook: ConfigMap default/wh-deny is labelled e2e.hypershift.dev/webhook=deny"
	// The API server takes a moment to start calling a new webhook: until
	// then the object is created, and is deleted for the next try.
	eventually(t, time.Minute, "the webhook on the node to reject ConfigMap wh-deny", func() error {
		out, err := kubectl(t, kc, "create", "-f", deny)
		switch {
		case err == nil:
			mustKubectl(t, kc, "delete", "configmap", "wh-deny")
			return fmt.Errorf("ConfigMap wh-deny was created: the webhook was not called yet")
		case !strings.Contains(out, want):
			return fmt.Errorf("kubectl create of wh-deny failed without the webhook's answer: %w\n%s", err, out)
		}
		return nil
	})
	if out, err := kubectl(t, kc, "create", "-f", allow); err != nil {
		t.Errorf("the webhook did not admit ConfigMap wh-allow: %v\n%s", err, out)
	}
	if logs := mustKubectl(t, kc, "logs", "wh"); !strings.Contains(logs, "webhook: allowed ConfigMap default/wh-allow") {
		t.Errorf("the webhook's log does not show it was asked about wh-allow:\n%s", logs)
	}
}
