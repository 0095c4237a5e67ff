// Package clustercache keeps one connection per hosted cluster: a REST
// config built from the cluster's admin kubeconfig and whatever a
// controller builds on it (clients, informers), shared by every reconcile
// that talks to that cluster. Cluster API's controllers/clustercache is the
// model.
//
// Lifecycle of an entry:
//
//	Get (none, or kubeconfig changed) ──connect──▶ connected ──probe ok──┐
//	       ▲                                           │  ▲──────────────┘
//	       │                                           │ FailureThreshold probes failed in a row,
//	       │                                           │ a probe answered 401/403,
//	       │                                           │ any request answered 401, or Forget
//	       └──────── next Get rebuilds ◀── disconnected (informers stopped, entry dropped)
//
// Dropping an entry on 401/403 is what lets a rotated kubeconfig be picked
// up: the next Get reads the Secret anew and connects with it, instead of
// serving caches whose watches the API server keeps refusing.
package clustercache

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/kubeconfig"
)

// Defaults of the health check: a probe every 10 s, given 5 s; five
// failures in a row (50 s of an unreachable API server) disconnect.
const (
	DefaultProbeInterval    = 10 * time.Second
	DefaultProbeTimeout     = 5 * time.Second
	DefaultFailureThreshold = 5
	DefaultProbePath        = "/readyz"
)

// AdminProbePath is the probe of a cache that holds admin credentials: an
// admin may always read it, so a 403 means the credentials lost their
// rights.
const AdminProbePath = "/api/v1/namespaces/kube-system"

// Options configure a Cache.
type Options[T any] struct {
	// Connect builds what a connection holds from the cluster's REST
	// config. Informers it starts must stop when run is done: run is
	// cancelled when the entry is disconnected. ctx bounds the connect
	// itself (e.g. waiting for caches to sync).
	Connect func(ctx context.Context, key types.NamespacedName, cfg *rest.Config, run context.Context) (T, error)
	// Configure adjusts the REST config (QPS, user agent) before Connect;
	// may be nil.
	Configure func(cfg *rest.Config)
	// OnDisconnect is told when the health check or an authentication
	// error dropped an entry (not on Forget), e.g. to enqueue the objects
	// that used it; may be nil.
	OnDisconnect func(key types.NamespacedName, value T, reason string)
	// ProbePath is what the health check GETs. A path that needs
	// authorization (e.g. a namespace) also catches credentials that lost
	// their rights (403). Default DefaultProbePath.
	ProbePath string
	// ProbeInterval, ProbeTimeout and FailureThreshold: an entry is
	// disconnected after FailureThreshold failed probes in a row.
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	FailureThreshold int
	Log              logr.Logger
}

// Cache keeps one connection per cluster key.
type Cache[T any] struct {
	opts  Options[T]
	mu    sync.Mutex
	byKey map[types.NamespacedName]*entry[T]
}

type entry[T any] struct {
	key         types.NamespacedName
	fingerprint [32]byte
	run         context.Context //nolint:containedctx // the lifetime of this connection
	stop        context.CancelFunc
	value       T    // set under Cache.mu once connected
	stored      bool // in byKey (under Cache.mu)
	closed      bool // disconnected (under Cache.mu)
}

// New returns an empty cache.
func New[T any](opts Options[T]) *Cache[T] {
	if opts.ProbePath == "" {
		opts.ProbePath = DefaultProbePath
	}
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.FailureThreshold <= 0 {
		opts.FailureThreshold = DefaultFailureThreshold
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Cache[T]{opts: opts, byKey: map[types.NamespacedName]*entry[T]{}}
}

// Get returns the connection to a cluster, connecting when there is none
// (never made, disconnected, forgotten) or the kubeconfig changed. The
// kubeconfig is read with kubeconfig.Parse: inline credentials only.
func (c *Cache[T]) Get(ctx context.Context, key types.NamespacedName, kubecfg []byte) (T, error) {
	var zero T
	fp := sha256.Sum256(kubecfg)
	c.mu.Lock()
	if e := c.byKey[key]; e != nil {
		if e.fingerprint == fp {
			c.mu.Unlock()
			return e.value, nil
		}
		c.closeLocked(e)
	}
	c.mu.Unlock()

	cfg, err := kubeconfig.Parse(kubecfg)
	if err != nil {
		return zero, fmt.Errorf("admin kubeconfig of %s: %w", key, err)
	}
	if c.opts.Configure != nil {
		c.opts.Configure(cfg)
	}
	run, stop := context.WithCancel(context.Background())
	e := &entry[T]{key: key, fingerprint: fp, run: run, stop: stop}
	// Every response passes here: a 401 means these credentials no longer
	// work (rotated, revoked), whatever the request.
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &authObserver{next: next, rejected: func(code int) {
			c.disconnect(e, fmt.Sprintf("the API server rejected the credentials (HTTP %d)", code))
		}}
	})
	probe, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		stop()
		return zero, fmt.Errorf("client for %s: %w", key, err)
	}
	value, err := c.opts.Connect(ctx, key, rest.CopyConfig(cfg), run)

	c.mu.Lock()
	defer c.mu.Unlock()
	if e.closed { // a 401 while connecting
		return zero, fmt.Errorf("hosted cluster %s: the API server rejected the credentials of its kubeconfig (HTTP 401); the next attempt reads the kubeconfig again", key)
	}
	if err != nil {
		stop()
		return zero, err
	}
	if other := c.byKey[key]; other != nil {
		if other.fingerprint == fp { // a concurrent Get won
			stop()
			return other.value, nil
		}
		c.closeLocked(other)
	}
	e.value, e.stored = value, true
	c.byKey[key] = e
	go c.healthCheck(e, probe)
	return value, nil
}

// Forget disconnects a cluster (it is being deleted): its informers stop.
func (c *Cache[T]) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKey[key]; e != nil {
		c.closeLocked(e)
	}
}

// Len is how many clusters are connected.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// closeLocked stops an entry and drops it; c.mu is held.
func (c *Cache[T]) closeLocked(e *entry[T]) {
	if c.byKey[e.key] == e {
		delete(c.byKey, e.key)
	}
	e.closed = true
	e.stop()
}

// disconnect drops an entry for reason and tells OnDisconnect; once.
func (c *Cache[T]) disconnect(e *entry[T], reason string) {
	c.mu.Lock()
	if e.closed {
		c.mu.Unlock()
		return
	}
	stored, value := e.stored, e.value
	c.closeLocked(e)
	c.mu.Unlock()
	c.opts.Log.Info("disconnected from hosted cluster", "hostedCluster", e.key.String(), "reason", reason)
	if stored && c.opts.OnDisconnect != nil {
		c.opts.OnDisconnect(e.key, value, reason)
	}
}

// healthCheck probes the cluster every ProbeInterval until the entry is
// disconnected.
func (c *Cache[T]) healthCheck(e *entry[T], kube kubernetes.Interface) {
	ticker := time.NewTicker(c.opts.ProbeInterval)
	defer ticker.Stop()
	failures := 0
	for {
		select {
		case <-e.run.Done():
			return
		case <-ticker.C:
		}
		err := c.probe(e.run, kube)
		switch {
		case err == nil:
			failures = 0
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			c.disconnect(e, fmt.Sprintf("health check: %v", err))
			return
		case e.run.Err() != nil:
			return
		default:
			failures++
			if failures >= c.opts.FailureThreshold {
				c.disconnect(e, fmt.Sprintf("health check failed %d times in a row, last: %v", failures, err))
				return
			}
		}
	}
}

func (c *Cache[T]) probe(ctx context.Context, kube kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	err := kube.Discovery().RESTClient().Get().AbsPath(c.opts.ProbePath).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("GET %s: %w", c.opts.ProbePath, err)
	}
	return nil
}

// authObserver reports responses that reject the credentials. Only 401
// counts here: a 403 on an ordinary request can be about that request (a
// namespace being terminated); the health check's probe, which the
// credentials must always be allowed, tells a 403 that is about them.
type authObserver struct {
	next     http.RoundTripper
	rejected func(code int)
}

func (a *authObserver) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		a.rejected(resp.StatusCode)
	}
	return resp, err
}

// WrappedRoundTripper lets client-go see through the observer.
func (a *authObserver) WrappedRoundTripper() http.RoundTripper { return a.next }
