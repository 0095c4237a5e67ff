package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"hypershift.dev/internal/nodes/join"
)

// The helpers the end-to-end tests share: clients of a hosted cluster,
// its conditions and nodes, a real node joined to it, and small utilities.
// A helper one test file uses stays in that file.

type joinedNode struct {
	name string
	ip   net.IP
}

func hostedClient(t *testing.T, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	return hostedClientWithTimeout(t, kubeconfig, 5*time.Second)
}

// hostedClientWithTimeout is a client whose requests give up after timeout
// (0: never, for watches).
func hostedClientWithTimeout(t *testing.T, kubeconfig string, timeout time.Duration) *kubernetes.Clientset {
	t.Helper()
	cfg := restConfig(t, kubeconfig)
	cfg.Timeout = timeout
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// instancePID reads the pid the runtime recorded for an instance.
func instancePID(t *testing.T, dataDir, cluster, instance string) int {
	t.Helper()
	return pidIn(t, filepath.Join(dataDir, "clusters", "clusters-"+cluster, instance, "pid.json"))
}

func hcCondition(t *testing.T, mgmt, name, typ string) string {
	t.Helper()
	out, _ := kubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", name, "-o",
		`jsonpath={.status.conditions[?(@.type=="`+typ+`")].status}/{.status.conditions[?(@.type=="`+typ+`")].reason}`)
	return strings.TrimSpace(out)
}

// waitReadyNodes waits until the cluster of kc has n Ready nodes.
func waitReadyNodes(t *testing.T, kc string, n int) {
	t.Helper()
	eventually(t, 3*time.Minute, strconv.Itoa(n)+" Ready nodes", func() error {
		out, err := kubectl(t, kc, "get", "nodes", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
		if err != nil {
			return errorf("%v: %s", err, out)
		}
		if ready := strings.Count(out, "True"); ready != n {
			return errorf("%d Ready nodes, want %d", ready, n)
		}
		return nil
	})
}

// pollAPI asks the hosted API for /version every 100 ms until the returned
// function is called, which reports how many answers and failures there
// were.
func pollAPI(t *testing.T, kc string) func() (answered, failed int) {
	t.Helper()
	cs := hostedClientWithTimeout(t, kc, 2*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	var ok, bad atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			res := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx)
			var code int
			res.StatusCode(&code)
			switch {
			case ctx.Err() != nil:
			case res.Error() == nil && code == http.StatusOK:
				ok.Add(1)
			default:
				bad.Add(1)
				t.Logf("hosted API: %v (%d)", res.Error(), code)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return func() (int, int) {
		cancel()
		wg.Wait()
		return int(ok.Load()), int(bad.Load())
	}
}

// requireRealNode skips unless this host can be a node.
func requireRealNode(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping the real node: not root, and containerd, the kubelet and kube-proxy need root (run the e2e tests as root)")
	}
	if _, err := join.CheckHost(join.DefaultCNIBinDir); err != nil {
		t.Fatalf("%v (run `make deps` as root)", err)
	}
}

// joinNode runs the printed join line (with extra flags) on the host and
// returns the node it reports Ready.
func joinNode(t *testing.T, hs *cli, joinArgs []string, extra ...string) joinedNode {
	t.Helper()
	out := hs.must(append(append([]string(nil), joinArgs...), extra...)...)
	return parseJoin(t, out)
}

// dumpOnFailure logs what a reader needs to see why a whole-cluster test
// failed: nodes, pods, the data-plane objects, events, describe, and the
// tails of every node log and of the konnectivity server's and API
// server's logs.
func dumpOnFailure(t *testing.T, hs *cli, cluster, kc, nodeDir string) {
	if !t.Failed() {
		return
	}
	for _, args := range [][]string{
		{"get", "nodes", "-o", "wide"},
		{"get", "pods", "-A", "-o", "wide"},
		{"-n", "kube-system", "get", "deployments,daemonsets,services,endpointslices,configmaps", "-o", "wide"},
		{"get", "events", "-A", "--sort-by=.lastTimestamp"},
	} {
		out, _ := kubectl(t, kc, args...)
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), lastLines(out, 40))
	}
	t.Logf("hypershift describe cluster %s:\n%s", cluster, hs.run("describe", "cluster", cluster).stdout)
	logs, _ := filepath.Glob(filepath.Join(nodeDir, "*", "*", "*.log"))
	for _, instance := range []string{"konnectivity-server", "kube-apiserver"} {
		cp, _ := filepath.Glob(filepath.Join(hs.dataDir, "clusters", "clusters-"+cluster, instance+"*", instance+"*.log"))
		logs = append(logs, cp...)
	}
	for _, log := range append(logs, filepath.Join(nodeDir, "node.log")) {
		if data, err := os.ReadFile(log); err == nil {
			t.Logf("%s:\n%s", log, lastLines(string(data), 25))
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func firstOf(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// kubeconfigServer is the API server URL of a kubeconfig.
func kubeconfigServer(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host
}

// checkToken authenticates with the service-account token alone.
func checkToken(t *testing.T, kc, token string) {
	t.Helper()
	admin, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: admin.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}, Timeout: 5 * time.Second}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("service-account token: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:default:robot" {
		t.Fatalf("token authenticates as %q", got)
	}
}
