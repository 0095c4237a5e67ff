package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCARotation rotates the CAs of a hosted cluster with simulated nodes
// while requests run through the admin kubeconfig (followed from its
// Secret, as a client would): requests fail only while the API server
// restarts for the etcd CA in DropOld, every node stays Ready, the admin
// kubeconfig saved before the rotation works in every phase before DropOld
// and is refused once the rotation is Done, and the etcd and Konnectivity
// CAs are replaced too.
func TestCARotation(t *testing.T) {
	quiet(t)
	hs := upCLI(t)
	start := time.Now()
	hs.must("create", "cluster", "simulated", "--name", "c", "--node-pool-replicas", "3", "--wait", "--timeout", "4m")
	budget := singleReplicaRestartBudget.slowMachine(time.Since(start))
	kc := filepath.Join(hs.dataDir, "c.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "c", "-o", kc)
	waitNodesReady(t, hostedClient(t, kc), 3, 3*time.Minute)
	apiPID := instancePID(t, hs.dataDir, "c", "kube-apiserver")
	cas := readOnceCAs(t, hs)

	run := rotateWatching(t, hs, kc, func(ctx context.Context, cs *kubernetes.Clientset) error {
		return allNodesReady(ctx, cs, 3)
	})
	run.check(t, budget)
	cas.checkReplaced(t, hs)
	checkServingFromKubeletCA(t, hs, false)
	// The API server reads the etcd CA once: DropOld restarts it.
	if got := instancePID(t, hs.dataDir, "c", "kube-apiserver"); got == apiPID {
		t.Errorf("kube-apiserver pid %d unchanged: DropOld did not restart it with the new etcd CA alone", got)
	}
	apiPID = instancePID(t, hs.dataDir, "c", "kube-apiserver")
	out := hs.must("describe", "cluster", "c")
	for _, want := range []string{"CA rotation:", "Done (token", "CARotation"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe cluster does not show %q:\n%s", want, out)
		}
	}

	// A second rotation starts from what the first left, as smoothly; the
	// admin kubeconfig of before it is the one issued by the first.
	hs.must("create", "kubeconfig", "--name", "c", "-o", kc)
	second := rotateWatching(t, hs, kc, func(ctx context.Context, cs *kubernetes.Clientset) error {
		return allNodesReady(ctx, cs, 3)
	})
	second.check(t, budget)
	checkServingFromKubeletCA(t, hs, false)
	if got := instancePID(t, hs.dataDir, "c", "kube-apiserver"); got == apiPID {
		t.Errorf("kube-apiserver pid %d unchanged: the second rotation's DropOld did not restart it", got)
	}
	token := caRotationToken(t, hs)
	if stderr := hs.fails("rotate", "ca", "--name", "c", "--token", token); !strings.Contains(stderr, "--token "+token+" was rotated for already") {
		t.Errorf("a repeated token said:\n%s", stderr)
	}
}

// caRotationToken is cluster c's last rotation token.
func caRotationToken(t *testing.T, hs *cli) string {
	t.Helper()
	hc, err := dynamicClient(t, filepath.Join(hs.dataDir, "management.kubeconfig")).Resource(hostedClusterGVR).Namespace("clusters").Get(t.Context(), "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, _, _ := unstructuredString(hc.Object, "status", "certificates", "caRotation", "token")
	return token
}

// TestCARotationHighlyAvailable rotates the CAs of a highly available
// control plane, whose endpoint is the API server proxy in front of two API
// servers: the proxy (which re-reads its backend CA bundle) does not
// restart, the API servers and etcd members restart once, in DropOld, for
// the etcd CA, one at a time, so requests go on.
func TestCARotationHighlyAvailable(t *testing.T) {
	quiet(t)
	hs := upCLI(t)
	hs.must("create", "cluster", "simulated", "--name", "c", "--availability-policy", "HighlyAvailable", "--node-pool-replicas", "1", "--wait", "--timeout", "5m")
	kc := filepath.Join(hs.dataDir, "c.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "c", "-o", kc)
	waitNodesReady(t, hostedClient(t, kc), 1, 3*time.Minute)
	instances := []string{"kube-apiserver-0", "kube-apiserver-1", "kube-apiserver-proxy"}
	before := map[string]int{}
	for _, name := range instances {
		before[name] = instancePID(t, hs.dataDir, "c", name)
	}
	cas := readOnceCAs(t, hs)
	run := rotateWatching(t, hs, kc, func(ctx context.Context, cs *kubernetes.Clientset) error {
		return allNodesReady(ctx, cs, 1)
	})
	run.check(t, highlyAvailableRestartBudget)
	cas.checkReplaced(t, hs)
	checkServingFromKubeletCA(t, hs, false)
	for _, name := range instances {
		restarted := instancePID(t, hs.dataDir, "c", name) != before[name]
		if want := name != "kube-apiserver-proxy"; restarted != want {
			t.Errorf("%s restarted: %t, want %t (the API servers read the etcd CA once, the proxy reloads its bundle)", name, restarted, want)
		}
	}
}

// rotationRun is what rotateWatching saw.
type rotationRun struct {
	ok, failed int
	errs       []string
	// oldBefore: outcomes of requests with the kubeconfig saved before the
	// rotation, by the phase they were made in.
	oldOK, oldFailed map[string]int
	// oldTimeouts counts the old kubeconfig's requests that only waited
	// past the client's timeout: on a busy machine an answer can take
	// longer, and no answer is not a refusal.
	oldTimeouts map[string]int
	oldErrs     []string
	// nodeProblems: samples (one a second) where the node check failed,
	// spanning notReady; unreachable: samples where the API server did not
	// answer it.
	nodeProblems []string
	notReady     window
	unreachable  int
	// failures spans every failed request of the followed admin
	// kubeconfig and every unanswered node check, but those that only
	// waited past the client's timeout (a busy machine answers late; a
	// hung API server fails the /readyz budget).
	failures window
	// outage is the longest time /readyz of the endpoint, asked every
	// 100 ms over a new connection, did not answer within readyzWithin;
	// slowestReadyz is the longest an answer took.
	outage        time.Duration
	slowestReadyz time.Duration
	// outageAt is when the longest outage was.
	outageAt window
	// The machine's own share, before the restarts: the longest /readyz
	// outage, the requests of the followed admin kubeconfig and the node
	// checks that only timed out (no answer, no refusal) and ended before
	// restartsFrom, 10 s before the test first saw DropOld or Done (a
	// sample of the phase lags by up to a request's 5 s). Nothing restarts
	// before DropOld, so no answer then is a machine too busy to answer,
	// which it stays in DropOld. Any other failure is never the machine's.
	restartsFrom                time.Time
	timeoutOutages              []window
	unreachableAt, timedOutAt   []time.Time
	baseOutage                  time.Duration
	baseFailed, baseUnreachable int
	phases                      []string
	entered                     []string
	took                        time.Duration
	// dataDir and start: whose record timeline reads, from when.
	dataDir string
	start   time.Time
}

// readyzWithin is how long the endpoint's /readyz may take to count as an
// answer: the timeout of the product's own readiness checks (the process
// runtime's probes, the API server proxy's health checks). A later answer
// counts as none; the slowest answer is reported either way.
const readyzWithin = 2 * time.Second

// readyzFresh asks the endpoint's /readyz over a new connection, as a
// client connecting now would be routed: a kept-alive connection stays with
// the API server it was opened to, which answers "not ready" from the
// moment it is told to stop while it still serves its requests (the
// followed admin kubeconfig's requests measure that side).
func readyzFresh(ctx context.Context, kubeconfig []byte) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return err
	}
	// A Dial of its own keeps client-go from sharing a cached transport.
	d := &net.Dialer{Timeout: readyzWithin}
	cfg.Dial = d.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Host, "/")+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: HTTP %d", resp.StatusCode)
	}
	return nil
}

// rotateWatching runs `rotate ca --wait` on cluster c and, until it is
// done, makes requests through the followed admin kubeconfig, a request
// with the kubeconfig file kc saved before (recording the phase), and
// samples nodeCheck once a second.
func rotateWatching(t *testing.T, hs *cli, kc string, nodeCheck func(context.Context, *kubernetes.Clientset) error) *rotationRun {
	t.Helper()
	mgmtKubeconfig := filepath.Join(hs.dataDir, "management.kubeconfig")
	oldConfig, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	admin := &adminFollower{t: t, mgmtKubeconfig: mgmtKubeconfig, prefix: fmt.Sprintf("rot%d-", time.Now().UnixNano())}
	if err := admin.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); admin.follow(ctx) }()
	go func() { defer wg.Done(); admin.request(ctx) }()

	run := &rotationRun{oldOK: map[string]int{}, oldFailed: map[string]int{}, oldTimeouts: map[string]int{}, dataDir: hs.dataDir}
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			admin.mu.Lock()
			cs := admin.client
			admin.mu.Unlock()
			if err := nodeCheck(ctx, cs); err != nil && ctx.Err() == nil {
				mu.Lock()
				if errors.Is(err, errListNodes) {
					run.unreachable++
					if isClientTimeout(err) {
						run.unreachableAt = append(run.unreachableAt, time.Now())
					} else {
						run.failures.add(time.Now())
					}
				} else {
					run.nodeProblems = append(run.nodeProblems, time.Now().Format("15:04:05")+" "+err.Error())
					run.notReady.add(time.Now())
				}
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		var down time.Time
		downTimedOut := false // every failure of this outage timed out
		for ctx.Err() == nil {
			admin.mu.Lock()
			kubeconfig := admin.kubeconfig
			admin.mu.Unlock()
			rctx, rcancel := context.WithTimeout(ctx, readyzWithin)
			asked := time.Now()
			err := readyzFresh(rctx, kubeconfig)
			rcancel()
			now := time.Now()
			mu.Lock()
			if err == nil {
				run.slowestReadyz = max(run.slowestReadyz, now.Sub(asked))
			}
			switch {
			case ctx.Err() != nil:
			case err != nil && down.IsZero():
				down, downTimedOut = now, timedOut(err)
			case err != nil:
				downTimedOut = downTimedOut && timedOut(err)
			case err == nil && !down.IsZero():
				if downTimedOut {
					run.timeoutOutages = append(run.timeoutOutages, window{first: down, last: now})
				}
				if now.Sub(down) > run.outage {
					run.outage, run.outageAt = now.Sub(down), window{first: down, last: now}
				}
				down = time.Time{}
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()

	// Requests run for a while before the rotation starts.
	time.Sleep(5 * time.Second)
	_, previousToken := rotationPhase(ctx, dynamicClient(t, mgmtKubeconfig))
	done := make(chan result, 1)
	start := time.Now()
	run.start = start
	go func() { done <- hs.run("rotate", "ca", "--name", "c", "--wait", "--timeout", "8m") }()
	mgmt := dynamicClient(t, mgmtKubeconfig)
	var rotateResult result
	for finished := false; !finished; {
		select {
		case rotateResult = <-done:
			finished = true
		case <-time.After(500 * time.Millisecond):
		}
		phase, token := rotationPhase(ctx, mgmt)
		if token == previousToken {
			// The controller has not taken the new token yet: the
			// previous rotation's Done is "before" this one.
			phase = ""
		}
		if len(run.phases) == 0 || run.phases[len(run.phases)-1] != phase {
			run.phases = append(run.phases, phase)
		}
		if (phase == "DropOld" || phase == "Done") && run.restartsFrom.IsZero() {
			mu.Lock()
			run.restartsFrom = time.Now().Add(-10 * time.Second)
			mu.Unlock()
		}
		if err := requestWithFreshConnection(ctx, oldConfig); err != nil {
			// A refusal counts in the phase read after it, when the
			// rotation moved on while the request ran (DropOld began):
			// on a busy machine a request takes seconds.
			if after, afterToken := rotationPhase(ctx, mgmt); afterToken != previousToken {
				phase = after
			}
			if isClientTimeout(err) {
				run.oldTimeouts[phase]++
			} else {
				run.oldFailed[phase]++
			}
			if len(run.oldErrs) < 10 {
				run.oldErrs = append(run.oldErrs, phase+": "+err.Error())
			}
		} else {
			run.oldOK[phase]++
		}
	}
	run.took = time.Since(start)
	if rotateResult.err != nil {
		t.Fatalf("hypershift rotate ca: %v\nstdout:\n%s\nstderr:\n%s", rotateResult.err, rotateResult.stdout, rotateResult.stderr)
	}
	t.Logf("hypershift rotate ca --wait (%.1fs):\n%s", run.took.Seconds(), rotateResult.stdout)
	// The old kubeconfig once more, now that the rotation is Done: asked
	// again while it only times out, for what is wanted is a refusal.
	for range 3 {
		err := requestWithFreshConnection(ctx, oldConfig)
		if err != nil && isClientTimeout(err) {
			run.oldTimeouts["after"]++
			continue
		}
		if err != nil {
			run.oldFailed["after"]++
		} else {
			run.oldOK["after"]++
		}
		break
	}
	// Requests go on for a while after the end.
	time.Sleep(15 * time.Second)
	cancel()
	wg.Wait()
	run.ok, run.failed, _, run.errs = admin.result()
	admin.mu.Lock()
	run.failures.merge(admin.failures)
	run.timedOutAt = admin.timedOutAt
	admin.mu.Unlock()
	run.baseline()
	// Every phase the controller entered, from its Events (a phase can
	// pass between two samples).
	events, err := hostedClient(t, mgmtKubeconfig).CoreV1().Events("clusters").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "CARotation" && e.InvolvedObject.Name == "c" {
			run.entered = append(run.entered, e.Message)
		}
	}
	return run
}

// baseline sums up what only timed out before restartsFrom.
func (run *rotationRun) baseline() {
	if run.restartsFrom.IsZero() {
		return
	}
	for _, o := range run.timeoutOutages {
		if o.last.Before(run.restartsFrom) {
			run.baseOutage = max(run.baseOutage, o.span())
		}
	}
	run.baseFailed = countBefore(run.timedOutAt, run.restartsFrom)
	run.baseUnreachable = countBefore(run.unreachableAt, run.restartsFrom)
}

func countBefore(times []time.Time, limit time.Time) int {
	n := 0
	for _, at := range times {
		if at.Before(limit) {
			n++
		}
	}
	return n
}

// timedOut: the /readyz request got no answer in time (its dial, its
// handshake or its response).
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) || isClientTimeout(err)
}

// check asserts what every rotation must show; within budget, requests
// may fail while the API servers restart in DropOld. The budget is the
// restarts' share: what the busy machine failed before them (baseline) is
// added to it, so a test beside heavy neighbours is held to what the
// restarts added, and a quiet one to the budget as written.
func (run *rotationRun) check(t *testing.T, budget restartBudget) {
	t.Helper()
	if run.baseOutage > 0 || run.baseFailed > 0 || run.baseUnreachable > 0 {
		t.Logf("before the restarts (until %s) the busy machine left /readyz unanswered for up to %s and %d requests and %d node checks timed out: the budget grows by as much",
			run.restartsFrom.Format("15:04:05.000"), run.baseOutage.Round(100*time.Millisecond), run.baseFailed, run.baseUnreachable)
		budget.outage += run.baseOutage
		budget.failed += run.baseFailed
		budget.unreachable += run.baseUnreachable
	}
	t.Logf("rotation took %s through phases %v; longest outage %s (slowest /readyz answer %s); followed admin kubeconfig: %d requests ok, %d failed (%s); old kubeconfig ok by phase %v, refused by phase %v",
		run.took.Round(time.Second), run.phases, run.outage.Round(100*time.Millisecond), run.slowestReadyz.Round(10*time.Millisecond), run.ok, run.failed, strings.Join(run.errs, "; "), run.oldOK, run.oldFailed)
	if run.unreachable > 0 {
		t.Logf("the node check found the API server unreachable in %d samples (one a second)", run.unreachable)
	}
	if run.outage > budget.outage {
		t.Errorf("the endpoint did not answer /readyz for %s, want at most %s", run.outage.Round(100*time.Millisecond), budget.outage)
	}
	// One restart: every failure but a timeout falls in one window as long
	// as the outage allowed, plus the 5 s a request may wait before it
	// fails (a run on a busy machine had timeouts in TrustBoth, a minute
	// before DropOld's restart).
	if span := run.failures.span(); span > budget.outage+5*time.Second {
		t.Errorf("requests and node checks failed over %s (%s), want one window of at most %s", span.Round(100*time.Millisecond), run.failures, budget.outage+5*time.Second)
	}
	if run.failed > budget.failed || run.ok < 50 {
		t.Errorf("%d requests through the followed admin kubeconfig failed (of %d), want at most %d: %s", run.failed, run.ok+run.failed, budget.failed, strings.Join(run.errs, "; "))
	}
	if run.unreachable > budget.unreachable {
		t.Errorf("the API server did not answer %d node checks (one a second), want at most %d", run.unreachable, budget.unreachable)
	}
	for _, p := range []string{"TrustBoth", "ReissueLeaves", "DistributeBundle", "DropOld", "Done"} {
		if !strings.Contains(strings.Join(run.entered, "\n"), "phase "+p) {
			t.Errorf("no event says the rotation entered phase %s: %v", p, run.entered)
		}
	}
	timeouts, answered := 0, 0
	for _, p := range []string{"", "TrustBoth", "ReissueLeaves", "DistributeBundle"} {
		if run.oldFailed[p] > 0 {
			t.Errorf("the admin kubeconfig saved before the rotation failed %d times in phase %q, before DropOld: %s", run.oldFailed[p], p, strings.Join(run.oldErrs, "; "))
		}
		timeouts += run.oldTimeouts[p]
		answered += run.oldOK[p]
	}
	// A request that waited past its 5 s on a busy machine is not a
	// refusal (a run had 2 of them in TrustBoth); what is asked is that the
	// old kubeconfig was accepted, so most requests must be answered.
	if answered < 5 || timeouts > answered {
		t.Errorf("the admin kubeconfig saved before the rotation was accepted %d times before DropOld and waited past its timeout %d times (by phase %v), want most requests answered: %s",
			answered, timeouts, run.oldTimeouts, strings.Join(run.oldErrs, "; "))
	} else if timeouts > 0 {
		t.Logf("the admin kubeconfig saved before the rotation waited past its timeout %d times before DropOld (accepted %d times)", timeouts, answered)
	}
	if run.oldOK["Done"] > 0 || run.oldOK["after"] > 0 || run.oldFailed["after"] == 0 {
		t.Errorf("the admin kubeconfig saved before the rotation is not refused after DropOld (ok by phase %v; %d requests after Done timed out)", run.oldOK, run.oldTimeouts["after"])
	}
	switch {
	case len(run.nodeProblems) == 0:
	case budget.nodeNotReady > 0 && run.notReady.span() <= budget.nodeNotReady:
		t.Logf("the node read NotReady in %d samples over %s (one window of at most %s is allowed: its kubelet restarts once for the new trust): %s",
			len(run.nodeProblems), run.notReady.span(), budget.nodeNotReady, strings.Join(firstOf(run.nodeProblems, 5), "; "))
	default:
		t.Errorf("nodes were not all Ready in %d samples over %s (allowed: %s): %s", len(run.nodeProblems), run.notReady.span(), budget.nodeNotReady, strings.Join(firstOf(run.nodeProblems, 5), "; "))
	}
	if t.Failed() {
		t.Logf("what the control plane recorded:\n%s", timeline(run.dataDir, run.start, run.start.Add(run.took), run.outageAt))
	}
}

// window is the time from a first event to a last one.
type window struct{ first, last time.Time }

func (w *window) add(at time.Time) {
	if w.first.IsZero() || at.Before(w.first) {
		w.first = at
	}
	if at.After(w.last) {
		w.last = at
	}
}

func (w *window) merge(o window) {
	if !o.first.IsZero() {
		w.add(o.first)
		w.add(o.last)
	}
}

func (w window) span() time.Duration { return w.last.Sub(w.first) }

func (w window) String() string {
	if w.first.IsZero() {
		return "none"
	}
	return w.first.Format("15:04:05.000") + " to " + w.last.Format("15:04:05.000")
}

// isClientTimeout: the request got no answer within the client's timeout.
func isClientTimeout(err error) bool { return saysTimedOut(err.Error()) }

// saysTimedOut: an error's text (or a client's output) says the request
// got no answer within the client's timeout.
func saysTimedOut(text string) bool {
	return strings.Contains(text, "Client.Timeout exceeded") || strings.Contains(text, "context deadline exceeded")
}

// requestWithFreshConnection lists ConfigMaps with cfg over a new
// connection: a kept-alive one was verified when it was opened.
func requestWithFreshConnection(ctx context.Context, cfg *rest.Config) error {
	c := *cfg
	c.Timeout = 5 * time.Second
	// A Dial of its own keeps client-go from sharing a cached transport.
	d := &net.Dialer{Timeout: 5 * time.Second}
	c.Dial = d.DialContext
	cs, err := kubernetes.NewForConfig(&c)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

func dynamicClient(t *testing.T, kubeconfig string) dynamic.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

var hostedClusterGVR = schema.GroupVersionResource{Group: "hypershift.dev", Version: "v1alpha1", Resource: "hostedclusters"}

// rotationPhase is cluster c's status.certificates.caRotation phase and
// token; "" before the first.
func rotationPhase(ctx context.Context, mgmt dynamic.Interface) (phase, token string) {
	hc, err := mgmt.Resource(hostedClusterGVR).Namespace("clusters").Get(ctx, "c", metav1.GetOptions{})
	if err != nil {
		return "?", ""
	}
	phase, _, _ = unstructuredString(hc.Object, "status", "certificates", "caRotation", "phase")
	token, _, _ = unstructuredString(hc.Object, "status", "certificates", "caRotation", "token")
	return phase, token
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	cur := any(obj)
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// errListNodes: the API server did not answer the node check.
var errListNodes = errors.New("list nodes")

// allNodesReady says whether want nodes exist and all are Ready.
func allNodesReady(ctx context.Context, cs *kubernetes.Clientset, want int) error {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("%w: %w", errListNodes, err)
	}
	var notReady []string
	for _, n := range nodes.Items {
		ready, why := false, "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready, why = c.Status == corev1.ConditionTrue, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		if !ready {
			notReady = append(notReady, n.Name+" ("+why+")")
		}
	}
	if len(nodes.Items) != want || len(notReady) > 0 {
		return fmt.Errorf("%d nodes, not Ready: %v", len(nodes.Items), notReady)
	}
	return nil
}

// waitNodesReady waits until want nodes are Ready.
func waitNodesReady(t *testing.T, cs *kubernetes.Clientset, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := allNodesReady(t.Context(), cs, want)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nodes not Ready after %s: %v", timeout, err)
		}
		time.Sleep(time.Second)
	}
}
