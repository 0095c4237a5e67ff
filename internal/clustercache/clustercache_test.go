package clustercache_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/kubeconfig"
)

// apiServer answers like a kube-apiserver for the paths these tests use:
// requests with the accepted bearer token get 200 (an empty NodeList for
// /api/v1/nodes), others 401; the probe path answers probeStatus.
type apiServer struct {
	*httptest.Server
	t           *testing.T
	mu          sync.Mutex
	token       string
	probeStatus int
	// failNext probes answer 500 before probeStatus counts again.
	failNext int
	probes   atomic.Int32
}

func newAPIServer(t *testing.T, token string) *apiServer {
	t.Helper()
	s := &apiServer{t: t, token: token, probeStatus: http.StatusOK}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		token, probeStatus := s.token, s.probeStatus
		if r.URL.Path == "/readyz" {
			if s.failNext > 0 {
				s.failNext--
				probeStatus = http.StatusInternalServerError
			}
			s.probes.Add(1) // with the answer it gets, so waitProbes counts only new answers
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			return
		}
		switch r.URL.Path {
		case "/readyz":
			w.WriteHeader(probeStatus)
			if probeStatus == http.StatusForbidden {
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
				return
			}
			_, _ = w.Write([]byte(`{}`))
		case "/api/v1/nodes":
			_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","items":[]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// failNextProbes makes the next n probes answer 500.
func (s *apiServer) failNextProbes(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = n
}

func (s *apiServer) set(token string, probeStatus int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token, s.probeStatus = token, probeStatus
}

// kubeconfig for the test server (client-go sends credentials over TLS
// only).
func (s *apiServer) kubeconfig(token string) []byte {
	kc, err := kubeconfig.Render(kubeconfig.Params{
		Name: "c", Server: s.URL, Token: token,
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}),
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return kc
}

// conn is what the tests' Connect builds: a client, the token it was made
// with, and the lifetime its informers would have.
type conn struct {
	kube  kubernetes.Interface
	token string
	run   context.Context //nolint:containedctx // observed by the test
}

type recorder struct {
	connects     atomic.Int32
	disconnected chan string
	// listOnConnect: Connect lists Nodes, as an informer's first sync does.
	listOnConnect bool
}

// cacheUnderTest is one extension of its own cache.
type cacheUnderTest struct {
	*clustercache.Extension[*conn]
	cache *clustercache.Cache
}

func (c cacheUnderTest) Len() int { return c.cache.Len() }

// connectedCache starts an API server that accepts token and a cache that
// probes it every interval (threshold failures disconnect), and connects.
func connectedCache(t *testing.T, token string, interval time.Duration, threshold int) (*apiServer, *recorder, cacheUnderTest, *conn) {
	t.Helper()
	api := newAPIServer(t, token)
	rec := &recorder{}
	cache := newCache(t, rec, interval, threshold)
	c, err := cache.Get(t.Context(), key, api.kubeconfig(token))
	if err != nil {
		t.Fatal(err)
	}
	return api, rec, cache, c
}

func newCache(t *testing.T, rec *recorder, interval time.Duration, threshold int) cacheUnderTest {
	t.Helper()
	cache := clustercache.New(clustercache.Options{ProbeInterval: interval, ProbeTimeout: time.Second, FailureThreshold: threshold})
	return cacheUnderTest{Extension: extension(cache, "test", rec), cache: cache}
}

// extension registers an extension whose Connect makes a conn and whose
// OnDisconnect records the reason in rec.
func extension(cache *clustercache.Cache, name string, rec *recorder) *clustercache.Extension[*conn] {
	rec.disconnected = make(chan string, 10)
	return clustercache.Register(cache, clustercache.ExtensionOptions[*conn]{
		Name: name,
		Connect: func(ctx context.Context, _ types.NamespacedName, cfg *rest.Config, run context.Context) (*conn, error) {
			rec.connects.Add(1)
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			if rec.listOnConnect {
				if _, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
					return nil, err
				}
			}
			return &conn{kube: kube, token: cfg.BearerToken, run: run}, nil
		},
		OnDisconnect: func(_ types.NamespacedName, _ *conn, reason string) { rec.disconnected <- reason },
	})
}

func waitDisconnect(t *testing.T, rec *recorder) string {
	t.Helper()
	select {
	case reason := <-rec.disconnected:
		return reason
	case <-time.After(10 * time.Second):
		t.Fatal("the entry was not disconnected")
		return ""
	}
}

func stopped(c *conn) bool { return c.run.Err() != nil }

var key = types.NamespacedName{Namespace: "clusters", Name: "a"}

// A kubeconfig rotated on the cluster side: the old token now gets 401.
// The health check drops the entry (stopping its informers) and the next
// Get connects with the new kubeconfig.
func TestUnauthorizedProbeDisconnectsAndNextGetUsesNewKubeconfig(t *testing.T) {
	api, rec, cache, first := connectedCache(t, "old", 20*time.Millisecond, 100)
	if again, _ := cache.Get(t.Context(), key, api.kubeconfig("old")); again != first || rec.connects.Load() != 1 {
		t.Fatalf("the same kubeconfig connected again (%d connects)", rec.connects.Load())
	}

	api.set("new", http.StatusOK)
	if reason := waitDisconnect(t, rec); !strings.Contains(reason, "401") && !strings.Contains(strings.ToLower(reason), "unauthorized") {
		t.Errorf("disconnect reason %q does not name the 401", reason)
	}
	if !stopped(first) || cache.Len() != 0 {
		t.Fatalf("after a 401: informers stopped %v, entries %d; want stopped and none", stopped(first), cache.Len())
	}
	second, err := cache.Get(t.Context(), key, api.kubeconfig("new"))
	if err != nil {
		t.Fatal(err)
	}
	if second.token != "new" || rec.connects.Load() != 2 {
		t.Errorf("rebuilt with token %q after %d connects, want the new kubeconfig's", second.token, rec.connects.Load())
	}
	if _, err := second.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("the rebuilt connection does not work: %v", err)
	}
}

// A 401 on any request — here a List — drops the entry at once, without
// waiting for the health check.
func TestUnauthorizedRequestDisconnects(t *testing.T) {
	api, rec, cache, c := connectedCache(t, "old", time.Hour, 100)
	if _, err := c.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list with valid credentials: %v", err)
	}
	if cache.Len() != 1 || stopped(c) {
		t.Fatal("a successful request disconnected the entry")
	}
	api.set("rotated", http.StatusOK)
	if _, err := c.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Fatal("list with rejected credentials succeeded")
	}
	waitDisconnect(t, rec)
	if !stopped(c) || cache.Len() != 0 {
		t.Errorf("after a 401: stopped %v, entries %d", stopped(c), cache.Len())
	}
}

// A 403 from the probe (the credentials lost their rights) drops the
// entry at the first probe, however high the failure threshold.
func TestForbiddenProbeDisconnects(t *testing.T) {
	api, rec, _, c := connectedCache(t, "t", 20*time.Millisecond, 100)
	api.set("t", http.StatusForbidden)
	waitDisconnect(t, rec)
	if !stopped(c) {
		t.Error("informers not stopped after a 403")
	}
	if n := api.probes.Load(); n > 10 {
		t.Errorf("%d probes before disconnecting on 403, want the first one to count", n)
	}
}

// Failures below the threshold keep the entry; FailureThreshold failures in
// a row disconnect it. The server fails exactly the probes it is told to,
// whatever the machine's load: two in a row, then answers.
func TestProbeFailuresDisconnectAfterThreshold(t *testing.T) {
	api, rec, cache, c := connectedCache(t, "t", 20*time.Millisecond, 3)
	for range 4 {
		api.failNextProbes(2)
		waitProbes(t, api, 3) // the two failures and an answer
	}
	select {
	case reason := <-rec.disconnected:
		t.Fatalf("disconnected below the threshold: %s", reason)
	default:
	}
	if stopped(c) || cache.Len() != 1 {
		t.Fatal("entry gone below the threshold")
	}
	api.set("t", http.StatusInternalServerError)
	if reason := waitDisconnect(t, rec); !strings.Contains(reason, "3 times") {
		t.Errorf("reason %q does not say how many probes failed", reason)
	}
	if !stopped(c) || cache.Len() != 0 {
		t.Error("entry kept after the threshold")
	}
}

// waitProbes waits until n more probes read the server's current answer.
func waitProbes(t *testing.T, api *apiServer, n int32) {
	t.Helper()
	target := api.probes.Load() + n
	deadline := time.Now().Add(10 * time.Second)
	for api.probes.Load() < target {
		if time.Now().After(deadline) {
			t.Fatal("no probes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Forget (the cluster is being deleted) stops the informers without
// telling OnDisconnect; the next Get connects again.
func TestForget(t *testing.T) {
	api, rec, cache, c := connectedCache(t, "t", time.Hour, 3)
	cache.Forget(key)
	if !stopped(c) || cache.Len() != 0 {
		t.Fatal("Forget kept the entry")
	}
	select {
	case reason := <-rec.disconnected:
		t.Errorf("Forget reported a disconnect: %s", reason)
	default:
	}
	if _, err := cache.Get(t.Context(), key, api.kubeconfig("t")); err != nil || rec.connects.Load() != 2 {
		t.Errorf("Get after Forget: %v, %d connects", err, rec.connects.Load())
	}
}

// Credentials rejected while connecting: Get fails saying so, keeps
// nothing, and the next Get with a working kubeconfig connects.
func TestUnauthorizedWhileConnecting(t *testing.T) {
	api := newAPIServer(t, "new")
	rec := &recorder{listOnConnect: true}
	cache := newCache(t, rec, time.Hour, 3)
	_, err := cache.Get(t.Context(), key, api.kubeconfig("old"))
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Get with rejected credentials: %v, want an error naming the 401", err)
	}
	if cache.Len() != 0 {
		t.Fatal("an entry was kept for rejected credentials")
	}
	c, err := cache.Get(t.Context(), key, api.kubeconfig("new"))
	if err != nil || c.token != "new" {
		t.Fatalf("Get with the new kubeconfig: %v", err)
	}
}
