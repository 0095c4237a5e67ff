package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// leafValidity is the test's leaf certificate validity. Leaves are
// backdated by a tenth of it, so each lives 132 s and is renewed 88 s into
// that, 76 s after it was issued, 44 s before it expires: requests run for
// renewalWindow, over three and more renewals of the API server's serving
// certificate, and a renewal that did not reach a component, the admin
// kubeconfig or the operator in time would fail requests within a minute.
// The mechanism is the same at a year: only the timer differs.
const leafValidity = 2 * time.Minute

// renewalWindow is how long requests run: long enough for three renewals
// (the first leaf is issued before the window starts, the third renewal
// comes ~220 s into it), so a leaf is renewed again after it was itself a
// renewal, more than once.
const renewalWindow = 270 * time.Second

// TestCertificateRenewal runs a management plane and a hosted cluster
// whose leaves live 2 minutes: over 4.5 minutes and three or more renewals of the API server's
// serving certificate, requests through the admin kubeconfig — re-read
// from its Secret when it changes, as a client would — never fail, and
// the API server and etcd keep their processes (they reload).
func TestCertificateRenewal(t *testing.T) {
	quiet(t)
	hs := upCLI(t, "--leaf-certificate-validity", leafValidity.String())
	hs.must("create", "cluster", "none", "--name", "c", "--wait", "--timeout", "4m")
	apiPID := instancePID(t, hs.dataDir, "c", "kube-apiserver")
	etcdPID := instancePID(t, hs.dataDir, "c", "etcd-0")
	mgmtKubeconfig := filepath.Join(hs.dataDir, "management.kubeconfig")
	mgmtPIDFile := filepath.Join(hs.dataDir, "management", "kube-apiserver", "pid.json")
	mgmtAPIPID := pidIn(t, mgmtPIDFile)
	mgmtCert := adminCertOf(t, mgmtKubeconfig)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	admin := &adminFollower{t: t, mgmtKubeconfig: mgmtKubeconfig}
	if err := admin.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); admin.follow(ctx) }()
	go func() { defer wg.Done(); admin.request(ctx) }()

	// The serving certificate as clients get it, through the endpoint.
	// The window runs on past renewalWindow, for up to 3 minutes more,
	// until the first and 3 renewals were seen: on a machine twice as slow
	// the renewals come later, and the third fell at the window's end.
	serials := map[string]bool{}
	deadline := time.Now().Add(renewalWindow)
	for last := deadline.Add(3 * time.Minute); time.Now().Before(deadline) || (time.Now().Before(last) && !admin.sawRenewals(len(serials), 4)); {
		if serial, err := admin.servingSerial(); err == nil {
			serials[serial] = true
		}
		time.Sleep(500 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	slow := admin.timeouts()
	ok, failed, kubeconfigs, errs := admin.result()
	t.Logf("serving certificates seen: %d; admin kubeconfigs: %d; requests: %d ok, %d failed", len(serials), kubeconfigs, ok, failed)
	if len(serials) < 4 {
		t.Errorf("saw %d serving certificates in %s and up to 3 minutes more, want the first and 3 renewals", len(serials), renewalWindow)
	}
	if kubeconfigs < 4 {
		t.Errorf("the admin kubeconfig Secret changed %d times, want it to follow 3 renewals", kubeconfigs-1)
	}
	// A renewal that did not reach the API server, the admin kubeconfig
	// or the client fails requests with TLS or authentication errors, and
	// one that restarted a process with refused or reset connections: no
	// request may fail so. A request that only waited past the client's
	// 5-s timeout (a machine too busy to answer: seen once in 627 while
	// the other packages' tests ran) is not a renewal's failure, unless
	// more than two did — a reload that hung the API server would time
	// out every request for as long as it hung.
	if failed-slow > 0 || slow > 2 || ok < 100 {
		t.Errorf("%d requests failed (of %d; %d of them timed out), want none but at most 2 timeouts: %s", failed, ok+failed, slow, strings.Join(errs, "; "))
	} else if slow > 0 {
		t.Logf("%d requests timed out on a busy machine, no other failed: %s", slow, strings.Join(errs, "; "))
	}
	if got := instancePID(t, hs.dataDir, "c", "kube-apiserver"); got != apiPID {
		t.Errorf("kube-apiserver pid %d, was %d: a renewal restarted it instead of a reload", got, apiPID)
	}
	if got := instancePID(t, hs.dataDir, "c", "etcd-0"); got != etcdPID {
		t.Errorf("etcd-0 pid %d, was %d: a renewal restarted it instead of a reload", got, etcdPID)
	}
	// The management plane's leaves renew the same way.
	if got := pidIn(t, mgmtPIDFile); got != mgmtAPIPID {
		t.Errorf("management kube-apiserver pid %d, was %d: a renewal restarted it", got, mgmtAPIPID)
	}
	if bytes.Equal(adminCertOf(t, mgmtKubeconfig), mgmtCert) {
		t.Error("the management kubeconfig still has its first admin certificate: the management plane did not renew")
	}
	out := hs.must("describe", "cluster", "c")
	if !regexpMatch(out, `(?m)^\s+kube-apiserver-server\s+leaf\s+\S+Z \([^)]+\)\s+\S+Z \([^)]+\)`) {
		t.Errorf("describe cluster does not list the serving certificate's expiry and renewal:\n%s", out)
	}
	if !strings.Contains(out, "CertificatesRenewed") {
		t.Errorf("describe cluster shows no renewal event:\n%s", out)
	}
}

func pidIn(t *testing.T, path string) int {
	t.Helper()
	// An instance may start a pass after its cluster is Available (the
	// scheduler follows the first NodePool).
	var raw []byte
	eventually(t, time.Minute, path, func() error {
		var err error
		raw, err = os.ReadFile(path)
		return err
	})
	var rec struct {
		PID int `json:"pid"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.PID
}

func adminCertOf(t *testing.T, kubeconfig string) []byte {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.CertData
}

// adminFollower keeps a client of the hosted cluster made from the admin
// kubeconfig Secret, remade when the Secret changes, and counts the
// outcomes of requests made through it.
type adminFollower struct {
	t              *testing.T
	mgmtKubeconfig string
	// prefix starts the names of the ConfigMaps request creates, so that
	// two followers of one cluster do not collide.
	prefix string

	mu          sync.Mutex
	kubeconfig  []byte
	client      *kubernetes.Clientset
	kubeconfigs int
	ok, failed  int
	errs        []string
	// failures is the window from the first failed request to the last,
	// leaving out those that only waited past the client's timeout.
	failures window
	// timedOutAt is when each request that only waited past the client's
	// timeout gave up.
	timedOutAt []time.Time
}

// refresh reads the admin kubeconfig Secret through the management plane
// (whose own kubeconfig file is rewritten when its leaves renew, so it is
// read again each time) and makes a new client when it changed.
func (a *adminFollower) refresh(ctx context.Context) error {
	mgmt := hostedClient(a.t, a.mgmtKubeconfig)
	secret, err := mgmt.CoreV1().Secrets("clusters").Get(ctx, "c-admin-kubeconfig", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("admin kubeconfig Secret: %w", err)
	}
	kc := secret.Data["kubeconfig"]
	a.mu.Lock()
	defer a.mu.Unlock()
	if bytes.Equal(kc, a.kubeconfig) {
		return nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return err
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	a.kubeconfig, a.client = kc, cs
	a.kubeconfigs++
	return nil
}

func (a *adminFollower) follow(ctx context.Context) {
	for ctx.Err() == nil {
		if err := a.refresh(ctx); err != nil && ctx.Err() == nil {
			a.t.Logf("reading the admin kubeconfig: %v", err) // the management plane's client, not the measured one
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// request makes a write and a read every 100 ms through the current client.
func (a *adminFollower) request(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		a.mu.Lock()
		cs := a.client
		a.mu.Unlock()
		name := fmt.Sprintf("%sr-%d", a.prefix, i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if err == nil {
			_, err = cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		}
		if ctx.Err() != nil {
			return
		}
		a.mu.Lock()
		if err != nil {
			a.failed++
			if isClientTimeout(err) {
				a.timedOutAt = append(a.timedOutAt, time.Now())
			} else {
				a.failures.add(time.Now())
			}
			a.errs = append(a.errs, time.Now().Format("15:04:05.000")+" "+err.Error())
		} else {
			a.ok++
		}
		a.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

// servingSerial is the serial of the certificate the endpoint serves,
// verified with the kubeconfig's CA.
func (a *adminFollower) servingSerial() (string, error) {
	a.mu.Lock()
	kc := a.kubeconfig
	a.mu.Unlock()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.CAData)
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

// sawRenewals: serials serving certificates and as many admin
// kubeconfigs were seen, at least want of each.
func (a *adminFollower) sawRenewals(serials, want int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return serials >= want && a.kubeconfigs >= want
}

// timeouts counts the failed requests that only waited past the
// client's timeout.
func (a *adminFollower) timeouts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.errs {
		if saysTimedOut(e) {
			n++
		}
	}
	return n
}

func (a *adminFollower) result() (ok, failed, kubeconfigs int, errs []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.errs) > 10 {
		a.errs = a.errs[:10]
	}
	return a.ok, a.failed, a.kubeconfigs, a.errs
}
