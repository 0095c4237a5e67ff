package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"hypershift.dev/internal/pki"
)

// kubeRuntimeCARotation rotates the CAs of the kube runtime's cluster
// inner while a requester follows its admin kubeconfig Secret: the
// rotation reaches Done (trust bundles and reissued leaves reach the
// running pods through their directory mounts; what is read only at start
// rolls the pods), the kubeconfig saved before is refused and a new one
// works. The operator issues 6-minute leaves during the rotation and
// 1-year ones after it: the renewal that follows reaches etcd, the
// controller manager and the scheduler in place (their pods are not
// replaced, and keep working after the old leaves expired). It rewrites
// the saved kubeconfig inner for the subtests after it. It closes settled
// once the operator runs at its usual validity again and the controller
// manager has rolled for it (or when it ends before), so that other
// clusters may use the operator while the short leaves run out.
func kubeRuntimeCARotation(t *testing.T, hs *cli, mgmt, inner, ns string, settled chan<- struct{}) {
	var once sync.Once
	settle := func() { once.Do(func() { close(settled) }) }
	defer settle()
	eventually(t, 2*time.Minute, "inner's API server pod ready for 10 s", func() error {
		return readyFor(t, mgmt, ns, "kube-apiserver", 10*time.Second)
	})
	oldConfig, err := clientcmd.BuildConfigFromFlags("", inner)
	if err != nil {
		t.Fatal(err)
	}
	if err := requestWithFreshConnection(t.Context(), oldConfig); err != nil {
		t.Fatalf("the saved kubeconfig before the rotation: %v", err)
	}
	restoreValidity := setOperatorLeafValidity(t, mgmt, "6m")

	// Quiet while the rotation's requests are counted; the renewal's are
	// only logged.
	quiet := quietNow(t)
	req := followInnerAdmin(t, mgmt)
	time.Sleep(3 * time.Second)
	start := time.Now()
	r := hs.run("--kubeconfig", mgmt, "rotate", "ca", "--name", "inner", "--wait", "--timeout", "15m")
	took := time.Since(start)
	if r.err != nil {
		req.stop()
		t.Fatalf("rotate ca: %v\nstdout:\n%s\nstderr:\n%s\n%s", r.err, r.stdout, r.stderr,
			mustKubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", "inner", "-o", "jsonpath={.status.certificates.caRotation}"))
	}
	restoreValidity()
	phases := rotationEvents(t, mgmt)
	for _, p := range []string{"TrustBoth", "ReissueLeaves", "DistributeBundle", "DropOld", "Done"} {
		if !strings.Contains(phases, "phase "+p) {
			t.Errorf("no event says the rotation entered phase %s: %s", p, phases)
		}
	}
	if err := requestWithFreshConnection(t.Context(), oldConfig); err == nil {
		t.Error("the kubeconfig saved before the rotation still works after Done")
	}
	hs.must("--kubeconfig", mgmt, "create", "kubeconfig", "--name", "inner", "-o", inner)
	if out, err := kubectl(t, inner, "get", "configmap", "kept", "-o", "jsonpath={.data.k}"); err != nil || out != "v" {
		t.Errorf("the new kubeconfig after the rotation: %q, %v", out, err)
	}
	ok, failed, gap, errs := req.stop()
	quiet()
	t.Logf("rotate ca --wait took %.1fs; the followed admin kubeconfig: %d requests ok, %d failed, longest gap between answers %.1fs; %s",
		took.Seconds(), ok, failed, gap.Seconds(), strings.Join(firstOf(errs, 5), "; "))
	if ok < 50 {
		t.Errorf("only %d requests answered during the rotation", ok)
	}

	// The renewal of the 6-minute leaves issued in ReissueLeaves. The
	// controller manager's --cluster-signing-duration follows the
	// operator's validity: its pods roll once for the change back, before.
	eventually(t, 3*time.Minute, "the controller manager to run without --cluster-signing-duration", func() error {
		args, err := kubectl(t, mgmt, "-n", ns, "get", "deployment", "kube-controller-manager", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
		if err != nil || strings.Contains(args, "--cluster-signing-duration") {
			return fmt.Errorf("args %s, %w", args, err)
		}
		if _, err := kubectl(t, mgmt, "-n", ns, "rollout", "status", "deployment/kube-controller-manager", "--timeout=1m"); err != nil {
			return err
		}
		return readyFor(t, mgmt, ns, "kube-controller-manager", 5*time.Second)
	})
	settle()
	before := podsOf(t, mgmt, ns)
	old := servedNotAfter(t, inner)
	if until := time.Until(old); until <= 0 || until > time.Hour {
		t.Fatalf("the endpoint serves a certificate valid until %s, want one of the 6-minute leaves of the rotation still to renew", old)
	}
	req = followInnerAdmin(t, mgmt)
	eventually(t, 8*time.Minute, "the API server to serve a renewed 1-year certificate", func() error {
		if na := servedNotAfter(t, inner); time.Until(na) < time.Hour {
			return fmt.Errorf("it serves one valid until %s", na.Format(time.TimeOnly))
		}
		return nil
	})
	// Past the old leaves' expiry: a component that did not re-read its
	// files would fail now.
	if wait := time.Until(old) + 20*time.Second; wait > 0 {
		time.Sleep(wait)
	}
	ok, failed, gap, errs = req.stop()
	t.Logf("through the renewal: %d requests ok, %d failed, longest gap %.1fs; %s", ok, failed, gap.Seconds(), strings.Join(firstOf(errs, 5), "; "))
	after := podsOf(t, mgmt, ns)
	for _, component := range []string{"etcd", "kube-controller-manager", "kube-scheduler"} {
		if before[component] == after[component] {
			continue
		}
		// The controllers' client certificate is re-read by client-go when
		// it connects, and open connections are closed on a change it
		// checks for every 5 minutes (CertCallbackRefreshDuration). These
		// 6-minute leaves are renewed 2 minutes before they expire: when
		// the API server's pods were not rolled in between (which makes
		// every client connect again) after the kubelet refreshed the
		// files, the old leaf can still be in use at its expiry, and the
		// controller, refused, loses its lease and restarts in its pod
		// (docs/security.md). Leaves of 21 minutes or more cannot.
		if component != "etcd" && podNames(before[component]) == podNames(after[component]) {
			t.Logf("%s restarted in its pods during the renewal of 6-minute leaves: %s → %s; its last words: %s", component,
				before[component], after[component], lastWords(t, mgmt, ns, component))
			continue
		}
		t.Errorf("the renewal replaced or restarted the pods of %s: %s → %s (its leaves are reloadable)", component, before[component], after[component])
	}
	t.Logf("kube-apiserver pods: %s → %s (the Konnectivity server beside it reads its certificate only at start)", before["kube-apiserver"], after["kube-apiserver"])
	hs.must("--kubeconfig", mgmt, "create", "kubeconfig", "--name", "inner", "-o", inner)
}

// setOperatorLeafValidity adds --leaf-certificate-validity to the
// operator's arguments and waits for its rollout; the returned function
// puts the arguments back.
func setOperatorLeafValidity(t *testing.T, mgmt, validity string) func() {
	t.Helper()
	raw := mustKubectl(t, mgmt, "-n", "hypershift", "get", "deployment", "hypershift-operator", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatalf("operator args %q: %v", raw, err)
	}
	set := func(args []string) {
		patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": args}})
		if err != nil {
			t.Fatal(err)
		}
		mustKubectl(t, mgmt, "-n", "hypershift", "patch", "deployment", "hypershift-operator", "--type=json", "-p", string(patch))
		mustKubectl(t, mgmt, "-n", "hypershift", "rollout", "status", "deployment/hypershift-operator", "--timeout=3m")
	}
	set(append(append([]string(nil), args...), "--leaf-certificate-validity="+validity))
	return func() { set(args) }
}

// rotationEvents are the messages of inner's CARotation Events.
func rotationEvents(t *testing.T, mgmt string) string {
	t.Helper()
	events, err := hostedClient(t, mgmt).CoreV1().Events("clusters").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == "CARotation" && e.InvolvedObject.Name == "inner" {
			out = append(out, e.Message)
		}
	}
	return strings.Join(out, "\n")
}

// podsOf names each component's pods with their UIDs and restart counts.
func podsOf(t *testing.T, mgmt, ns string) map[string]string {
	t.Helper()
	out := mustKubectl(t, mgmt, "-n", ns, "get", "pods", "-o",
		`jsonpath={range .items[*]}{.metadata.labels.hypershift\.dev/component} {.metadata.name}/{.metadata.uid}/{.status.containerStatuses[*].restartCount}{"\n"}{end}`)
	pods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		component, pod, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		pods[component] = strings.TrimSpace(pods[component] + " " + pod)
	}
	return pods
}

// podNames are the NAME/UID of each pod in podsOf's value, without the
// restart counts.
func podNames(pods string) string {
	var names []string
	for _, p := range strings.Fields(pods) {
		// A pod of several containers has their counts apart.
		if i := strings.LastIndex(p, "/"); i >= 0 {
			names = append(names, p[:i])
		}
	}
	return strings.Join(names, " ")
}

// lastWords are the last lines the previous container of component's pods
// logged.
func lastWords(t *testing.T, mgmt, ns, component string) string {
	out, err := kubectl(t, mgmt, "-n", ns, "logs", "-l", "hypershift.dev/component="+component, "--previous", "--tail", "3")
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(out)
}

// servedNotAfter is the expiry of the certificate the endpoint of
// kubeconfig kc serves.
func servedNotAfter(t *testing.T, kc string) time.Time {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	chain, err := pki.ServedChain(ctx, strings.TrimPrefix(cfg.Host, "https://"))
	if err != nil {
		return time.Time{}
	}
	return chain[0].NotAfter
}

// innerAdminRequester gets ConfigMap kept every 100 ms with the admin
// kubeconfig read from its Secret in the management cluster (re-read every
// 2 s, as a client following it would), and measures the longest time
// between two answers.
type innerAdminRequester struct {
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	mu         sync.Mutex
	ok, failed int
	gap        time.Duration
	errs       []string
}

func followInnerAdmin(t *testing.T, mgmt string) *innerAdminRequester {
	t.Helper()
	mc := hostedClient(t, mgmt)
	ctx, cancel := context.WithCancel(t.Context())
	r := &innerAdminRequester{cancel: cancel}
	var kubeconfig []byte
	var cs *kubernetes.Clientset
	refresh := func() {
		secret, err := mc.CoreV1().Secrets("clusters").Get(ctx, "inner-admin-kubeconfig", metav1.GetOptions{})
		if err != nil || bytes.Equal(secret.Data["kubeconfig"], kubeconfig) {
			return
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
		if err != nil {
			return
		}
		cfg.Timeout = 2 * time.Second
		d := &net.Dialer{Timeout: 2 * time.Second}
		cfg.Dial = d.DialContext
		if c, err := kubernetes.NewForConfig(cfg); err == nil {
			kubeconfig, cs = secret.Data["kubeconfig"], c
		}
	}
	refresh()
	if cs == nil {
		t.Fatal("no admin kubeconfig Secret clusters/inner-admin-kubeconfig")
	}
	r.wg.Go(func() {
		last, lastRefresh := time.Now(), time.Now()
		for ctx.Err() == nil {
			if time.Since(lastRefresh) > 2*time.Second {
				refresh()
				lastRefresh = time.Now()
			}
			_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
			now := time.Now()
			r.mu.Lock()
			switch {
			case ctx.Err() != nil:
			case err == nil:
				r.ok++
				r.gap = max(r.gap, now.Sub(last))
				last = now
			default:
				r.failed++
				if len(r.errs) < 10 && !errors.Is(err, context.Canceled) {
					r.errs = append(r.errs, now.Format(time.TimeOnly)+" "+err.Error())
				}
			}
			r.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})
	return r
}

// stop ends the requests and reports them.
func (r *innerAdminRequester) stop() (ok, failed int, gap time.Duration, errs []string) {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.failed, r.gap, r.errs
}
