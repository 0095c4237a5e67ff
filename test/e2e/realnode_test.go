package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"hypershift.dev/internal/nodes/join"
)

// TestNoneNodes is the user's journey of bring-your-own nodes: a None
// cluster prints a join command; joins with a bad token, an expired one,
// another cluster's token or another cluster's CA hash fail plainly and
// leave nothing; and — as root — the printed command makes this host a real
// node (containerd, the compiled-in kubelet, kube-proxy and the API server
// proxy) that runs a pod from an image the test built, serves `kubectl
// logs` and `kubectl exec`, and `join --reset` leaves the host as it found
// it (kube-proxy's chains and the API server address on lo included).
func TestNoneNodes(t *testing.T) {
	wholeHost(t)
	hs := upCLI(t)

	out := hs.must("create", "cluster", "none", "--name", "r", "--wait", "--timeout", "3m")
	joinArgs := joinCommandArgs(t, out)
	kc := hs.adminKubeconfig("r")

	t.Run("bad tokens fail plainly and create nothing", func(t *testing.T) {
		other := joinCommandArgs(t, hs.must("create", "cluster", "none", "--name", "o", "--wait", "--timeout", "3m"))
		expired := joinCommandArgs(t, hs.must("create", "join-command", "--name", "r", "--ttl", "1s"))
		time.Sleep(1500 * time.Millisecond)
		token := flagValue(t, joinArgs, "--token")
		id, _, _ := strings.Cut(token, ".")
		cases := []struct {
			name string
			args []string
			want string
		}{
			{"unknown token", withFlag(joinArgs, "--token", "abcdef.0123456789abcdef"), "bootstrap token abcdef was not issued by hosted cluster clusters/r"},
			{"wrong secret", withFlag(joinArgs, "--token", id+".0123456789abcdef"), "bootstrap token " + id + " of NodePool r was refused by clusters/r: its secret part is wrong"},
			{"another cluster's token", withFlag(joinArgs, "--token", flagValue(t, other, "--token")), "was not issued by hosted cluster clusters/r: it belongs to another cluster"},
			{"another cluster's CA hash", withFlag(joinArgs, "--ca-cert-hash", flagValue(t, other, "--ca-cert-hash")), "the join command is for another cluster"},
			{"expired token", expired, " of NodePool r expired at "},
			{"malformed token", withFlag(joinArgs, "--token", "not-a-token"), "--token must be ID.SECRET"},
		}
		for _, tc := range cases {
			nodeDir := filepath.Join(shortTempDir(t), "node")
			stderr := hs.fails(append(tc.args, "--node-dir", nodeDir)...)
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("%s: error\n%s\nwant it to say %q", tc.name, stderr, tc.want)
			}
			if _, err := os.Stat(nodeDir); err == nil {
				t.Errorf("%s: the failed join created %s", tc.name, nodeDir)
			}
			if pids := pidsUnder(t, nodeDir); len(pids) > 0 {
				t.Errorf("%s: the failed join left processes %v", tc.name, pids)
			}
		}
		hs.must("destroy", "cluster", "--name", "o")
	})

	t.Run("join tokens are bounded and can be single-use", func(t *testing.T) {
		before := mustKubectl(t, kc, "-n", "kube-system", "get", "secrets", "--field-selector", "type=bootstrap.kubernetes.io/token", "-o", "name")
		if stderr := hs.fails("create", "join-command", "--name", "r", "--ttl", "48h"); !strings.Contains(stderr, "--ttl 48h0m0s is longer than the 24h0m0s a join token may live") {
			t.Errorf("create join-command --ttl 48h said:\n%s", stderr)
		}
		if after := mustKubectl(t, kc, "-n", "kube-system", "get", "secrets", "--field-selector", "type=bootstrap.kubernetes.io/token", "-o", "name"); after != before {
			t.Errorf("a refused --ttl created a token:\nbefore %s\nafter %s", before, after)
		}
		single := joinCommandArgs(t, hs.must("create", "join-command", "--name", "r", "--single-use"))
		id, _, _ := strings.Cut(flagValue(t, single, "--token"), ".")
		labels := mustKubectl(t, kc, "-n", "kube-system", "get", "secret", "bootstrap-token-"+id, "-o", "jsonpath={.metadata.labels}")
		if !strings.Contains(labels, `"hypershift.dev/single-use":"true"`) {
			t.Errorf("the --single-use token's Secret is labelled %s", labels)
		}
	})

	t.Run("a real node runs a pod from a local image", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("skipping the real node: not root, and containerd and the kubelet need root (run `make test` as root)")
		}
		if _, err := join.CheckHost(join.DefaultCNIBinDir); err != nil {
			t.Fatalf("%v (run `make deps` as root)", err)
		}
		// The node dir is given through a symlink: reset must still find
		// the mounts under it, which the kernel names by the real path.
		nodeDir, realNodeDir := symlinkedNodeDir(t)
		foreign := makeForeignState(t, nodeDir, realNodeDir)
		before := resetWhenDone(t, hs, nodeDir)

		// The token from a file, out of the process list.
		tokenFile := filepath.Join(t.TempDir(), "token")
		writeFile(t, tokenFile, flagValue(t, joinArgs, "--token")+"\n")
		args := withFlag(joinArgs, "--token", tokenFile)
		for i := range args {
			if args[i] == "--token" {
				args[i] = "--token-file"
			}
		}
		out := hs.must(append(args, "--node-dir", nodeDir)...)
		if !regexpMatch(out, `node \S+ is Ready \(\d+\.\ds\)`) {
			t.Fatalf("join did not report a Ready node:\n%s", out)
		}
		nodeName := strings.Fields(out[strings.Index(out, "node "):])[1]
		// The token stays on the node only until the kubelet has its
		// client certificate.
		eventually(t, 30*time.Second, "the node daemon removes the bootstrap kubeconfig", func() error {
			if _, err := os.Stat(filepath.Join(nodeDir, "bootstrap-kubeconfig")); err == nil {
				return errorf("%s/bootstrap-kubeconfig is still there", nodeDir)
			}
			return nil
		})
		labels := mustKubectl(t, kc, "get", "node", nodeName, "-o", "jsonpath={.metadata.labels}")
		if !strings.Contains(labels, `"hypershift.dev/nodepool":"r"`) {
			t.Errorf("node %s is not labelled with its NodePool: %s", nodeName, labels)
		}
		eventually(t, time.Minute, "NodePool r counts the node", func() error {
			got, _ := kubectl(t, filepath.Join(hs.dataDir, "management.kubeconfig"), "-n", "clusters", "get", "nodepool", "r", "-o", "jsonpath={.status.readyReplicas}")
			if strings.TrimSpace(got) != "1" {
				return errorf("readyReplicas %q", got)
			}
			return nil
		})

		eventually(t, time.Minute, "get clusters counts the node", func() error {
			if out := hs.must("get", "clusters"); !regexpMatch(out, `(?m)^clusters\s+r\s+.*\s1/1\s`) {
				return errorf("get clusters:\n%s", out)
			}
			return nil
		})
		checkJoinRefusals(t, hs)
		checkNodeNetworking(t, kc, realNodeDir)
		image := buildHelloImage(t)
		hs.must("node", "load-image", image, "--node-dir", nodeDir)
		pod := filepath.Join(t.TempDir(), "pod.yaml")
		writeFile(t, pod, `apiVersion: v1
kind: Pod
metadata:
  name: hello
spec:
  containers:
  - name: hello
    image: hypershift.test/hello:1
    imagePullPolicy: Never
    ports:
    - containerPort: 8080
    volumeMounts:
    - name: cloud-token
      mountPath: /var/run/secrets/tokens
      readOnly: true
  volumes:
  - name: cloud-token
    projected:
      sources:
      - serviceAccountToken:
          audience: sts.amazonaws.com
          expirationSeconds: 3600
          path: token
`)
		mustKubectl(t, kc, "apply", "-f", pod)
		mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/hello", "--timeout=120s")
		if logs := mustKubectl(t, kc, "logs", "hello"); !strings.Contains(logs, "hello from hello") {
			t.Errorf("kubectl logs = %q, want the workload's greeting", logs)
		}
		if got := mustKubectl(t, kc, "exec", "hello", "--", "/hello", "exec", "works"); strings.TrimSpace(got) != "exec works" {
			t.Errorf("kubectl exec printed %q, want \"exec works\"", got)
		}
		// A cluster without an issuer configured: the pod discovers the
		// default issuer in-cluster and verifies its own projected token
		// (docs/workload-identity.md). The name resolves through the
		// cluster's DNS, which serves once a CoreDNS pod on this node is
		// ready: the hello pod can be ready first.
		eventually(t, 2*time.Minute, "kube-dns has a ready endpoint", func() error {
			out, err := kubectl(t, kc, "-n", "kube-system", "get", "endpointslices", "-l", "kubernetes.io/service-name=kube-dns",
				"-o", `jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{"\n"}{end}`)
			if err != nil || strings.TrimSpace(out) == "" {
				return errorf("no ready kube-dns endpoint: %q, %v", out, err)
			}
			return nil
		})
		eventually(t, 30*time.Second, "the pod verifying its own token in-cluster", func() error {
			got, err := kubectl(t, kc, "exec", "hello", "--", "/hello", "verify-token", "-audience", "sts.amazonaws.com", "/var/run/secrets/tokens/token")
			if err != nil || strings.TrimSpace(got) != "verified system:serviceaccount:default:default https://kubernetes.default.svc" {
				// Which hop failed: the name, or the Service behind it.
				addrs, rerr := kubectl(t, kc, "exec", "hello", "--", "/hello", "resolve", "kubernetes.default.svc")
				return errorf("%q, %v (kubernetes.default.svc resolves to %q, %v)", got, err, strings.TrimSpace(addrs), rerr)
			}
			return nil
		})
		podIP := strings.TrimSpace(mustKubectl(t, kc, "get", "pod", "hello", "-o", "jsonpath={.status.podIP}"))
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + podIP + ":8080/")
		if err != nil {
			t.Errorf("pod %s does not answer from the host: %v", podIP, err)
		} else {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(body), "hello from hello") {
				t.Errorf("pod answered %q", body)
			}
		}

		foreign.hostPathPod(t, kc)
		checkPodsInNodeCgroup(t, realNodeDir)
		killShims(t, realNodeDir)

		// Not fatal: what the reset left or removed is checked below either way.
		if r := hs.run("join", "--reset", "--node-dir", nodeDir); r.err != nil || !strings.Contains(r.stdout, "node "+nodeName+" stopped") {
			t.Errorf("join --reset: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
		}
		after := readHost(t)
		if diff := before.diff(after); len(diff) > 0 {
			t.Errorf("join --reset left the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
		if _, err := os.Stat(nodeDir); err == nil {
			t.Errorf("join --reset left %s", nodeDir)
		}
		if pids := nodePids(t, foreign, nodeDir, realNodeDir); len(pids) > 0 {
			t.Errorf("join --reset left processes %v", pids)
		}
		if mounts, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mounts, []byte(realNodeDir)) {
			t.Errorf("join --reset left mounts under %s", realNodeDir)
		}
		foreign.checkSurvived(t)
		// The cluster is unharmed and a new join is possible.
		mustKubectl(t, kc, "get", "--raw", "/readyz")
	})
}

// checkNodeNetworking checks what the node daemon runs beside the kubelet:
// kube-proxy, which writes its Service chains in both families (so that the
// reset check below covers them), and the API server proxy on the
// cluster's advertise address, added to lo, answering with the cluster's
// certificate for the name pods use.
func checkNodeNetworking(t *testing.T, kc, realNodeDir string) {
	t.Helper()
	// kube-proxy reads Services as the node: the control plane binds
	// system:node-proxier to system:nodes (internal/dataplane).
	running := pidsUnder(t, realNodeDir) // processes name the resolved node dir
	for _, component := range []string{join.KubeProxy, join.APIServerProxy} {
		found := false
		for name := range running {
			found = found || strings.HasPrefix(name, component+"#")
		}
		if !found {
			t.Errorf("no %s runs under the node (processes naming %s: %v)", component, realNodeDir, running)
		}
	}
	eventually(t, time.Minute, "kube-proxy writes its Service chains (iptables and ip6tables)", func() error {
		for _, family := range []string{"iptables", "ip6tables"} {
			out, err := exec.Command(family, "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
			if err != nil {
				return errorf("%s -t nat -S KUBE-SERVICES: %v: %s", family, err, out)
			}
			if family == "iptables" && !strings.Contains(string(out), `default/kubernetes:https cluster IP`) {
				return errorf("no rule for the kubernetes Service in KUBE-SERVICES:\n%s", out)
			}
		}
		return nil
	})
	lo, _ := exec.Command("ip", "-o", "-4", "addr", "show", "dev", "lo").Output()
	if !strings.Contains(string(lo), " 172.20.0.1/32 ") {
		t.Errorf("lo lacks the API server address 172.20.0.1/32:\n%s", lo)
	}
	cfg, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	for _, c := range cfg.Clusters {
		roots.AppendCertsFromPEM(c.CertificateAuthorityData)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "kubernetes.default.svc", MinVersion: tls.VersionTLS12},
	}}
	eventually(t, 30*time.Second, "the node's API server proxy answers on 172.20.0.1:6443", func() error {
		resp, err := client.Get("https://172.20.0.1:6443/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			return errorf("/readyz: %d %s", resp.StatusCode, body)
		}
		return nil
	})
}

// symlinkedNodeDir returns a node dir path through a symlink, and the path
// it resolves to.
func symlinkedNodeDir(t *testing.T) (nodeDir, realNodeDir string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(shortTempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "real"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(base, "link", "node"), filepath.Join(base, "real", "node")
}

// nodePids lists processes naming the node dir, but the test's own.
func nodePids(t *testing.T, foreign *foreignState, dirs ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, dir := range dirs {
		for name, pid := range pidsUnder(t, dir) {
			if !foreign.pids()[pid] {
				out[name] = pid
			}
		}
	}
	return out
}

// joinCommandArgs finds the `hypershift join …` line in out and returns its
// arguments after the program name.
func joinCommandArgs(t *testing.T, out string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 2 && fields[0] == "hypershift" && fields[1] == "join" {
			return fields[1:]
		}
	}
	t.Fatalf("no join command in:\n%s", out)
	return nil
}

func flagValue(t *testing.T, args []string, flag string) string {
	t.Helper()
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("no %s in %v", flag, args)
	return ""
}

func withFlag(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == flag && i+1 < len(out) {
			out[i+1] = value
		}
	}
	return out
}
