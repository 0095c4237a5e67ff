package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
)

// TestDashboard drives `hypershift dashboard` in a real headless browser
// (Debian's chromium): the fleet table lists both clusters; killing one's
// API server turns its row Degraded within seconds, without a reload, and
// the other row stays as it was. Then a cluster is created, hibernated and
// resumed with the pages' form and buttons, each checked on the management
// API. Screenshots of the fleet and of the cluster's pages are kept as test
// artifacts.
func TestDashboard(t *testing.T) {
	ownDirAndPorts(t)
	browser := chromiumPath(t)
	hs := upCLI(t)
	for _, name := range []string{"w1", "w2"} {
		hs.must("create", "cluster", "none", "--name", name, "--wait", "--timeout", "4m")
	}
	url := startDashboard(t, hs)
	// Another user of this machine reaches the port, not the token.
	bare, _, _ := strings.Cut(url, "?")
	resp, err := http.Get(bare + "api/fleet")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the fleet without the dashboard's token: %s, want 401", resp.Status)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // root in CI; the browser only loads our loopback page
		chromedp.WindowSize(1400, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 6*time.Minute)
	defer cancelTimeout()

	row := func(name string) string { return fmt.Sprintf(`tr[data-cluster="clusters/%s"]`, name) }
	isDegraded := func(name string) bool {
		t.Helper()
		degraded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('%s').classList.contains('degraded')`, row(name))))
		if err != nil {
			t.Fatal(err)
		}
		return degraded
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(row("w1"))),
		chromedp.WaitVisible(chromedp.CSS(row("w2"))),
	); err != nil {
		t.Fatalf("fleet page: %v", err)
	}
	// A mark a reload would wipe.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded = true`)); err != nil {
		t.Fatal(err)
	}
	if cell, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row("w1")+" td.degraded-cell"))); err != nil || cell != "False" {
		t.Fatalf("w1's Degraded cell %q before the kill (%v), want False", cell, err)
	}

	if err := syscall.Kill(instancePID(t, hs.dataDir, "w1", "kube-apiserver"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	degraded := false
	for deadline := killed.Add(30 * time.Second); !degraded && time.Now().Before(deadline); {
		if degraded = isDegraded("w1"); !degraded {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !degraded {
		t.Fatal("w1's row did not turn Degraded within 30 s of its API server's kill")
	}
	t.Logf("w1's row Degraded %.1fs after its API server was killed", time.Since(killed).Seconds())
	if notReloaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.notReloaded === true`)); err != nil || !notReloaded {
		t.Errorf("the page was reloaded (%v): the row must change live", err)
	}
	if isDegraded("w2") {
		t.Error("w2's row turned Degraded too")
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "fleet.png", shot)

	// The cluster's page: its conditions and components.
	if err := doOnPage(t, ctx,
		chromedp.Navigate(url),
		chromedp.Click(chromedp.CSS(row("w1")+" a")),
		chromedp.WaitVisible(chromedp.CSS(`#components tbody tr`)),
	); err != nil {
		t.Fatalf("cluster page: %v", err)
	}
	components, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#components tbody`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(components, "kube-apiserver") || !strings.Contains(components, "etcd-0") {
		t.Errorf("w1's page lists components %q, want kube-apiserver and etcd-0", components)
	}
	if shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(90)); err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "cluster-w1.png", shot)

	operateFromThePages(t, ctx, hs, bare)
}

// operateFromThePages creates a cluster with the fleet page's form, then
// hibernates and resumes it with its page's buttons, as a user clicks them;
// after each, the HostedCluster's spec and status are read from the
// management API. A refusal is shown on the page with its HTTP status.
func operateFromThePages(t *testing.T, ctx context.Context, hs *cli, fleetURL string) {
	t.Helper()
	start := time.Now()
	c := managementClient(t, hs)
	key := client.ObjectKey{Namespace: "clusters", Name: "d1"}
	hc := &hypershiftv1alpha1.HostedCluster{}
	waitCondition := func(what string, typ hypershiftv1alpha1.ConditionType, status metav1.ConditionStatus) {
		t.Helper()
		eventually(t, 3*time.Minute, "d1 "+what, func() error {
			if err := c.Get(t.Context(), key, hc); err != nil {
				return err
			}
			if cond := meta.FindStatusCondition(hc.Status.Conditions, typ.String()); cond == nil || cond.Status != status || cond.ObservedGeneration < hc.Generation {
				return fmt.Errorf("%s: %+v at generation %d", typ, cond, hc.Generation)
			}
			return nil
		})
		t.Logf("%.1fs: d1 %s", time.Since(start).Seconds(), what)
	}
	// result waits for the page's answer to a change and returns it.
	result := func(want string) string {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#result.`+want))); err != nil {
			t.Fatalf("the page's answer (%s): %v", want, err)
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#result`)))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}

	create := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(fleetURL),
		chromedp.WaitEnabled(chromedp.CSS(`#create button[type=submit]`)),
		chromedp.SetValue(chromedp.CSS(`#create input[name=name]`), "d1"),
		chromedp.SetValue(chromedp.CSS(`#create select[name=platform]`), "none"),
		chromedp.Click(chromedp.CSS(`#create button[type=submit]`)),
	}
	if err := chromedp.Do(ctx, create...); err != nil {
		t.Fatalf("create d1 on the fleet page: %v", err)
	}
	if got := result("ok"); !strings.Contains(got, "hostedcluster clusters/d1 created") {
		t.Fatalf("the page says %q after create", got)
	}
	if err := c.Get(t.Context(), key, hc); err != nil || hc.Spec.Platform.Type != hypershiftv1alpha1.NonePlatform {
		t.Fatalf("d1 after the page's create: platform %q (%v)", hc.Spec.Platform.Type, err)
	}
	// The same name again: the refusal, with its status, on the page.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#create button[type=submit]`))); err != nil {
		t.Fatal(err)
	}
	if got := result("error"); !strings.Contains(got, "HTTP 409") || !strings.Contains(got, "clusters/d1 already exists") {
		t.Errorf("the page says %q after creating d1 twice, want HTTP 409 and the command's message", got)
	}
	waitCondition("Available", hypershiftv1alpha1.Available, metav1.ConditionTrue)

	if err := doOnPage(t, ctx,
		chromedp.Navigate(fleetURL),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-cluster="clusters/d1"]`)),
		chromedp.Click(chromedp.CSS(`tr[data-cluster="clusters/d1"] a`)),
		chromedp.WaitEnabled(chromedp.CSS(`#hibernate`)),
		chromedp.Click(chromedp.CSS(`#hibernate`)),
	); err != nil {
		t.Fatalf("hibernate d1 on its page: %v", err)
	}
	if got := result("ok"); !strings.Contains(got, "spec.hibernation.enabled=true") {
		t.Fatalf("the page says %q after hibernate", got)
	}
	waitCondition("Hibernated", hypershiftv1alpha1.Hibernated, metav1.ConditionTrue)
	if hc.Spec.Hibernation == nil || !hc.Spec.Hibernation.Enabled {
		t.Errorf("d1's spec.hibernation after the page's hibernate: %+v", hc.Spec.Hibernation)
	}

	// The page turns Resume on once it has seen the spec change.
	if err := doOnPage(t, ctx,
		chromedp.WaitEnabled(chromedp.CSS(`#resume`)),
		chromedp.Click(chromedp.CSS(`#resume`)),
	); err != nil {
		t.Fatalf("resume d1 on its page: %v", err)
	}
	if got := result("ok"); !strings.Contains(got, "spec.hibernation.enabled=false") {
		t.Fatalf("the page says %q after resume", got)
	}
	waitCondition("Available again", hypershiftv1alpha1.Available, metav1.ConditionTrue)
	if hc.Spec.Hibernation == nil || hc.Spec.Hibernation.Enabled || meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String()) {
		t.Errorf("d1 after the page's resume: spec.hibernation %+v, conditions %+v", hc.Spec.Hibernation, hc.Status.Conditions)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "cluster-d1.png", shot)
	t.Logf("created, hibernated and resumed d1 from the pages in %.1fs", time.Since(start).Seconds())
}

// chromiumPath is Debian's chromium (make test installs it as root).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("no chromium, and not root to install it (make test installs Debian's chromium when root): the dashboard's browser test cannot run")
	}
	t.Fatal("no chromium on PATH: `make deps` installs it")
	return ""
}

// startDashboard runs `hypershift dashboard` on a free loopback port until
// the test ends and returns its URL.
func startDashboard(t *testing.T, hs *cli) string {
	t.Helper()
	cmd := exec.Command(hs.bin, "--data-dir", hs.dataDir, "dashboard", "--address", "127.0.0.1:0", "--sample-interval", "2s")
	cmd.Env = withoutKubeconfig()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Not the test binary's own stderr: a dashboard left running would
	// hold it, and the stream of the run with it (hack/test.sh).
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("hypershift dashboard's stderr:\n%s", stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if url, ok := strings.CutPrefix(s.Text(), "dashboard at "); ok {
				lines <- url
			}
		}
	}()
	select {
	case url := <-lines:
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("hypershift dashboard did not print its address")
		return ""
	}
}

func saveArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s", path)
}

// doOnPage runs actions, and again from the first when the page replaced a
// node between finding and using it — the pages redraw as they poll, and
// Chrome then answers "Could not find node with given id" — up to 5 times,
// as a user whose click missed would click again. Any other error ends it.
// The actions start from where they can be run again: a page they navigate
// to first, or one they do not leave.
func doOnPage(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	t.Helper()
	var err error
	for try := range 5 {
		err = chromedp.Do(ctx, actions...)
		if err == nil || !strings.Contains(err.Error(), "Could not find node with given id") {
			return err
		}
		t.Logf("try %d: %v; again", try+1, err)
	}
	return err
}
