package clustercache_test

import (
	"context"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/kubeconfig"
)

// twoExtensions connects two controllers' extensions of one cache to one
// API server.
func twoExtensions(t *testing.T, interval time.Duration) (api *apiServer, cache *clustercache.Cache, a, b *clustercache.Extension[*conn], recA, recB *recorder, connA, connB *conn) {
	t.Helper()
	api = newAPIServer(t, "t")
	cache = clustercache.New(clustercache.Options{ProbeInterval: interval, ProbeTimeout: time.Second, FailureThreshold: 3})
	recA, recB = &recorder{}, &recorder{}
	a, b = extension(cache, "a", recA), extension(cache, "b", recB)
	var err error
	if connA, err = a.Get(t.Context(), key, api.kubeconfig("t")); err != nil {
		t.Fatal(err)
	}
	if connB, err = b.Get(t.Context(), key, api.kubeconfig("t")); err != nil {
		t.Fatal(err)
	}
	return api, cache, a, b, recA, recB, connA, connB
}

func notTold(t *testing.T, who string, rec *recorder) {
	t.Helper()
	select {
	case reason := <-rec.disconnected:
		t.Errorf("%s was told of a disconnect: %s", who, reason)
	default:
	}
}

// Two controllers asking for the same cluster get one connection: each its
// own part, built once; a 401 on one controller's request drops the
// connection under both, and each is told.
func TestExtensionsShareOneConnection(t *testing.T) {
	api, cache, a, _, recA, recB, connA, connB := twoExtensions(t, time.Hour)
	if cache.Len() != 1 {
		t.Fatalf("%d connections for one cluster, want 1", cache.Len())
	}
	if again, _ := a.Get(t.Context(), key, api.kubeconfig("t")); again != connA || recA.connects.Load() != 1 || recB.connects.Load() != 1 {
		t.Fatalf("parts rebuilt: a %d, b %d connects", recA.connects.Load(), recB.connects.Load())
	}
	api.set("rotated", http.StatusOK)
	if _, err := connA.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Fatal("list with rejected credentials succeeded")
	}
	for who, rec := range map[string]*recorder{"a": recA, "b": recB} {
		if reason := waitDisconnect(t, rec); !strings.Contains(reason, "401") {
			t.Errorf("%s told %q, want the 401", who, reason)
		}
	}
	if !stopped(connA) || !stopped(connB) || cache.Len() != 0 {
		t.Errorf("after a 401: a stopped %v, b stopped %v, %d connections", stopped(connA), stopped(connB), cache.Len())
	}
}

// The health check is the connection's, not an extension's: one failing
// probe sequence disconnects every extension.
func TestOneHealthCheckForEveryExtension(t *testing.T) {
	api, cache, _, _, recA, recB, connA, connB := twoExtensions(t, 20*time.Millisecond)
	api.set("t", http.StatusForbidden)
	waitDisconnect(t, recA)
	waitDisconnect(t, recB)
	if !stopped(connA) || !stopped(connB) || cache.Len() != 0 {
		t.Error("a 403 probe left a part running")
	}
}

// An extension that forgets a cluster stops only its own part; the
// connection closes with the last one. Nobody is told: forgetting is the
// extension's own doing.
func TestForgetDropsOnlyTheExtensionsPart(t *testing.T) {
	api, cache, a, b, recA, recB, connA, connB := twoExtensions(t, time.Hour)
	a.Forget(key)
	if !stopped(connA) || stopped(connB) || cache.Len() != 1 {
		t.Fatalf("after a's Forget: a stopped %v, b stopped %v, %d connections; want a stopped, b running, 1", stopped(connA), stopped(connB), cache.Len())
	}
	if _, err := connB.kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("b's client after a's Forget: %v", err)
	}
	b.Forget(key)
	if !stopped(connB) || cache.Len() != 0 {
		t.Errorf("after the last Forget: b stopped %v, %d connections", stopped(connB), cache.Len())
	}
	notTold(t, "a", recA)
	notTold(t, "b", recB)
	if _, err := a.Get(t.Context(), key, api.kubeconfig("t")); err != nil || recA.connects.Load() != 2 {
		t.Errorf("Get after Forget: %v, %d connects", err, recA.connects.Load())
	}
}

// A Get with another kubeconfig replaces the connection: the caller's old
// part goes silently, the other extension is told so that it comes back
// and connects with the kubeconfig its cluster's objects give it now.
func TestNewKubeconfigTellsTheOtherExtensions(t *testing.T) {
	api, cache, a, b, recA, recB, connA, connB := twoExtensions(t, time.Hour)
	moved, err := kubeconfig.Render(kubeconfig.Params{
		Name: "moved", Server: api.URL, Token: "t",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}),
	})
	if err != nil {
		t.Fatal(err)
	}
	newA, err := a.Get(t.Context(), key, moved)
	if err != nil {
		t.Fatal(err)
	}
	if newA == connA || !stopped(connA) || !stopped(connB) {
		t.Fatalf("a new kubeconfig kept the old parts: a stopped %v, b stopped %v", stopped(connA), stopped(connB))
	}
	if reason := waitDisconnect(t, recB); !strings.Contains(reason, "kubeconfig changed") {
		t.Errorf("b told %q, want the kubeconfig change", reason)
	}
	notTold(t, "a", recA)
	if _, err := b.Get(t.Context(), key, moved); err != nil || cache.Len() != 1 || recB.connects.Load() != 2 {
		t.Errorf("b's Get with the new kubeconfig: %v, %d connections, %d connects", err, cache.Len(), recB.connects.Load())
	}
}

// A failed build of a part keeps nothing: the connection made for it
// closes when no extension holds a part.
func TestFailedConnectLeavesNoConnection(t *testing.T) {
	api := newAPIServer(t, "t")
	cache := clustercache.New(clustercache.Options{ProbeInterval: time.Hour})
	ext := extension(cache, "a", &recorder{listOnConnect: true})
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the first List fails, not with a 401
	if _, err := ext.Get(ctx, key, api.kubeconfig("t")); err == nil {
		t.Fatal("connect with a cancelled context succeeded")
	}
	if cache.Len() != 0 {
		t.Errorf("%d connections kept after a failed connect", cache.Len())
	}
}

// Two extensions of one name would share parts meant for different types.
func TestRegisterRefusesADuplicateName(t *testing.T) {
	cache := clustercache.New(clustercache.Options{})
	extension(cache, "a", &recorder{})
	defer func() {
		if recover() == nil {
			t.Error("a second extension named a was registered")
		}
	}()
	extension(cache, "a", &recorder{})
}

// A Forget while the extension's part is being built wins: the part is not
// kept, and the connection, used by nobody, closes.
func TestForgetWhileConnecting(t *testing.T) {
	api := newAPIServer(t, "t")
	cache := clustercache.New(clustercache.Options{ProbeInterval: time.Hour})
	building, release := make(chan struct{}), make(chan struct{})
	var built *conn
	ext := clustercache.Register(cache, clustercache.ExtensionOptions[*conn]{
		Name: "slow",
		Connect: func(_ context.Context, _ types.NamespacedName, _ *rest.Config, run context.Context) (*conn, error) {
			close(building)
			<-release
			built = &conn{run: run}
			return built, nil
		},
	})
	done := make(chan error, 1)
	go func() {
		_, err := ext.Get(t.Context(), key, api.kubeconfig("t"))
		done <- err
	}()
	<-building
	ext.Forget(key)
	close(release)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "forgotten") {
		t.Fatalf("Get across a Forget: %v, want an error saying it was forgotten", err)
	}
	if !stopped(built) || cache.Len() != 0 {
		t.Errorf("after a Forget while connecting: part stopped %v, %d connections", stopped(built), cache.Len())
	}
}

// OnDisconnect is told outside the cache's lock: a callback may use the
// cache (here it forgets its own part) without deadlocking.
func TestOnDisconnectMayUseTheCache(t *testing.T) {
	api := newAPIServer(t, "t")
	cache := clustercache.New(clustercache.Options{ProbeInterval: time.Hour})
	a := extension(cache, "a", &recorder{})
	var b *clustercache.Extension[*conn]
	told := make(chan struct{}, 1)
	b = clustercache.Register(cache, clustercache.ExtensionOptions[*conn]{
		Name: "b",
		Connect: func(_ context.Context, _ types.NamespacedName, _ *rest.Config, run context.Context) (*conn, error) {
			return &conn{run: run}, nil
		},
		OnDisconnect: func(k types.NamespacedName, _ *conn, _ string) {
			b.Forget(k)
			told <- struct{}{}
		},
	})
	for _, get := range []func() error{
		func() error { _, err := a.Get(t.Context(), key, api.kubeconfig("t")); return err },
		func() error { _, err := b.Get(t.Context(), key, api.kubeconfig("t")); return err },
	} {
		if err := get(); err != nil {
			t.Fatal(err)
		}
	}
	moved, err := kubeconfig.Render(kubeconfig.Params{
		Name: "moved", Server: api.URL, Token: "t",
		CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := a.Get(t.Context(), key, moved); got <- err }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Get that replaced the connection did not return: OnDisconnect ran under the cache's lock")
	}
	<-told
}
