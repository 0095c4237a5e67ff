// Package clustercache keeps one connection per hosted cluster for the
// whole operator: a REST config built from the cluster's admin kubeconfig,
// one health check, and what each controller builds on it (its clients and
// informers: an Extension), shared by every reconcile that talks to that
// cluster. Cluster API's controllers/clustercache is the model: one cache
// per manager, controllers add what they watch.
//
// Lifecycle of a connection:
//
//	Extension.Get (none, or kubeconfig changed) ──open──▶ connected ──probe ok──┐
//	       ▲                                                 │  ▲──────────────┘
//	       │                                                 │ FailureThreshold probes failed in a row,
//	       │                                                 │ a probe answered 401/403,
//	       │                                                 │ any request answered 401,
//	       │                                                 │ or every extension Forgot it
//	       └──────── next Get rebuilds ◀── disconnected (every extension's informers stopped)
//
// Each extension builds its part on first Get and keeps it until the
// connection goes or it Forgets the cluster; an extension that forgets a
// cluster stops only its own informers. A disconnect tells every
// extension's OnDisconnect, so each controller comes back to the objects
// that used the connection.
//
// Dropping a connection on 401/403 is what lets a rotated kubeconfig be
// picked up: the next Get reads the Secret anew and connects with it,
// instead of serving caches whose watches the API server keeps refusing.
//
// Every extension must pass the same kubeconfig for a cluster (a function
// of the cluster's objects as the manager's cache has them, e.g.
// hostedref.OperatorKubeconfig of the stored HostedControlPlane): a Get
// with another kubeconfig replaces the connection under the others.
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
type Options struct {
	// ProbePath is what the health check GETs. A path that needs
	// authorization (e.g. a namespace) also catches credentials that lost
	// their rights (403). Default DefaultProbePath.
	ProbePath string
	// ProbeInterval, ProbeTimeout and FailureThreshold: a connection is
	// disconnected after FailureThreshold failed probes in a row.
	ProbeInterval    time.Duration
	ProbeTimeout     time.Duration
	FailureThreshold int
	// Configure adjusts the REST config every client of a connection
	// starts from (the probe's included); may be nil.
	Configure func(cfg *rest.Config)
	Log       logr.Logger
}

// ExtensionOptions say what one controller builds on a connection.
type ExtensionOptions[T any] struct {
	// Name tells the extension apart in the cache (one per controller).
	Name string
	// Connect builds what the extension holds from the cluster's REST
	// config. Informers it starts must stop when run is done: run is
	// cancelled when the connection is disconnected or the extension
	// forgotten. ctx bounds the connect itself (e.g. waiting for caches to
	// sync).
	Connect func(ctx context.Context, key types.NamespacedName, cfg *rest.Config, run context.Context) (T, error)
	// Configure adjusts this extension's copy of the REST config (QPS,
	// user agent) before Connect; may be nil.
	Configure func(cfg *rest.Config)
	// OnDisconnect is told when the connection was dropped under the
	// extension: by the health check, an authentication error, or another
	// extension's Get with a new kubeconfig (not on its own Forget or
	// Get), e.g. to enqueue the objects that used it; may be nil.
	OnDisconnect func(key types.NamespacedName, value T, reason string)
}

// Cache keeps one connection per cluster key, shared by its extensions.
type Cache struct {
	opts       Options
	mu         sync.Mutex
	byKey      map[types.NamespacedName]*conn
	extensions map[string]bool
}

// conn is one connection: the REST config every extension copies, the
// health check, and what each extension built on it.
type conn struct {
	key         types.NamespacedName
	fingerprint [32]byte
	cfg         *rest.Config
	run         context.Context //nolint:containedctx // the lifetime of this connection
	stop        context.CancelFunc
	// Under Cache.mu:
	parts      map[string]*part
	connecting int // extensions connecting now
	// forgotten: extensions that Forgot the cluster while building their
	// part, which is then not kept.
	forgotten map[string]bool
	closed    string // why it was disconnected; "" while open
}

// part is what one extension built on a connection.
type part struct {
	stop     context.CancelFunc
	value    any
	notified func(reason string) // the extension's OnDisconnect with its value
}

// Extension is one controller's handle on the cache.
type Extension[T any] struct {
	c    *Cache
	opts ExtensionOptions[T]
}

// New returns an empty cache.
func New(opts Options) *Cache {
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
	return &Cache{opts: opts, byKey: map[types.NamespacedName]*conn{}, extensions: map[string]bool{}}
}

// Register adds an extension to c. Names are unique: a second extension of
// the same name is a programming error and panics.
func Register[T any](c *Cache, opts ExtensionOptions[T]) *Extension[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if opts.Name == "" || c.extensions[opts.Name] {
		panic(fmt.Sprintf("clustercache: extension name %q empty or registered twice", opts.Name))
	}
	c.extensions[opts.Name] = true
	return &Extension[T]{c: c, opts: opts}
}

// Len is how many clusters are connected.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// Get returns what this extension built on the connection to a cluster,
// connecting when there is none (never made, disconnected, forgotten by
// every extension) or the kubeconfig changed, and building the extension's
// part when it has none. The kubeconfig is read with kubeconfig.Parse:
// inline credentials only.
func (x *Extension[T]) Get(ctx context.Context, key types.NamespacedName, kubecfg []byte) (T, error) {
	var zero T
	cn, err := x.c.open(key, kubecfg, x.opts.Name)
	if err != nil {
		return zero, err
	}
	c := x.c
	c.mu.Lock()
	if cn.closed != "" { // disconnected since open
		c.mu.Unlock()
		return zero, fmt.Errorf("hosted cluster %s: disconnected (%s); the next attempt connects again", key, cn.closed)
	}
	if p := cn.parts[x.opts.Name]; p != nil {
		c.mu.Unlock()
		return p.value.(T), nil //nolint:forcetypeassert // only this extension stores under its name
	}
	cn.connecting++
	delete(cn.forgotten, x.opts.Name)
	c.mu.Unlock()

	run, stop := context.WithCancel(cn.run)
	value, err := x.connect(ctx, key, cn, run)

	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case cn.closed != "": // e.g. a 401 while connecting
		stop()
		return zero, fmt.Errorf("hosted cluster %s: disconnected while connecting (%s); the next attempt reads the kubeconfig again", key, cn.closed)
	case cn.forgotten[x.opts.Name]:
		delete(cn.forgotten, x.opts.Name)
		stop()
		c.closeIfUnusedLocked(cn)
		return zero, fmt.Errorf("hosted cluster %s: forgotten while connecting", key)
	case err != nil:
		stop()
		c.closeIfUnusedLocked(cn)
		return zero, err
	}
	if p := cn.parts[x.opts.Name]; p != nil { // a concurrent Get won
		stop()
		return p.value.(T), nil //nolint:forcetypeassert // only this extension stores under its name
	}
	notified := func(string) {}
	if x.opts.OnDisconnect != nil {
		notified = func(reason string) { x.opts.OnDisconnect(key, value, reason) }
	}
	cn.parts[x.opts.Name] = &part{stop: stop, value: value, notified: notified}
	return value, nil
}

// connect runs the extension's Connect on a copy of the connection's REST
// config; the connection's count of parts being built goes down however
// Connect ends, a panic included.
func (x *Extension[T]) connect(ctx context.Context, key types.NamespacedName, cn *conn, run context.Context) (T, error) {
	defer func() {
		x.c.mu.Lock()
		cn.connecting--
		x.c.mu.Unlock()
	}()
	cfg := rest.CopyConfig(cn.cfg)
	if x.opts.Configure != nil {
		x.opts.Configure(cfg)
	}
	return x.opts.Connect(ctx, key, cfg, run)
}

// Forget drops this extension's part of a cluster's connection (the
// cluster is being deleted, sleeps, or moved away): its informers stop,
// OnDisconnect is not told. The connection closes with its last part.
func (x *Extension[T]) Forget(key types.NamespacedName) {
	if x == nil {
		return
	}
	c := x.c
	c.mu.Lock()
	defer c.mu.Unlock()
	cn := c.byKey[key]
	if cn == nil {
		return
	}
	if p := cn.parts[x.opts.Name]; p != nil {
		delete(cn.parts, x.opts.Name)
		p.stop()
	} else if cn.connecting > 0 {
		cn.forgotten[x.opts.Name] = true // a Get of this extension may be building it
	}
	c.closeIfUnusedLocked(cn)
}

// open returns the open connection to key made from kubecfg, making it
// when there is none or the kubeconfig changed; a connection replaced
// under other extensions tells them.
func (c *Cache) open(key types.NamespacedName, kubecfg []byte, by string) (*conn, error) {
	fp := sha256.Sum256(kubecfg)
	c.mu.Lock()
	cn := c.byKey[key]
	if cn != nil && cn.fingerprint == fp {
		c.mu.Unlock()
		return cn, nil
	}
	var told []func(string)
	if cn != nil {
		told = c.closeLocked(cn, kubeconfigChanged, by)
	}
	c.mu.Unlock()
	notify(told, kubeconfigChanged)
	told = nil

	cfg, err := kubeconfig.Parse(kubecfg)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig of %s: %w", key, err)
	}
	if c.opts.Configure != nil {
		c.opts.Configure(cfg)
	}
	run, stop := context.WithCancel(context.Background())
	cn = &conn{key: key, fingerprint: fp, run: run, stop: stop, parts: map[string]*part{}, forgotten: map[string]bool{}}
	// Every response passes here: a 401 means these credentials no longer
	// work (rotated, revoked), whatever the request and whichever
	// extension made it.
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return &authObserver{next: next, rejected: func(code int) {
			c.disconnect(cn, fmt.Sprintf("the API server rejected the credentials (HTTP %d)", code))
		}}
	})
	probe, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		stop()
		return nil, fmt.Errorf("client for %s: %w", key, err)
	}
	cn.cfg = cfg

	c.mu.Lock()
	if other := c.byKey[key]; other != nil { // a concurrent Get connected meanwhile
		if other.fingerprint == fp {
			c.mu.Unlock()
			stop()
			return other, nil
		}
		told = c.closeLocked(other, kubeconfigChanged, by)
	}
	c.byKey[key] = cn
	c.mu.Unlock()
	notify(told, kubeconfigChanged)
	go c.healthCheck(cn, probe)
	return cn, nil
}

// kubeconfigChanged is why a connection replaced by another kubeconfig's
// was closed.
const kubeconfigChanged = "the kubeconfig changed"

// closeIfUnusedLocked closes a connection no extension holds or is
// building a part of; c.mu is held.
func (c *Cache) closeIfUnusedLocked(cn *conn) {
	if len(cn.parts) == 0 && cn.connecting == 0 && cn.closed == "" {
		c.closeLocked(cn, "no extension uses it", "")
	}
}

// closeLocked stops a connection and every part of it, drops it, and
// returns the OnDisconnects to tell (all parts' but except's); c.mu is
// held.
func (c *Cache) closeLocked(cn *conn, reason, except string) []func(string) {
	if c.byKey[cn.key] == cn {
		delete(c.byKey, cn.key)
	}
	var told []func(string)
	if cn.closed == "" {
		cn.closed = reason
		for name, p := range cn.parts {
			if name != except {
				told = append(told, p.notified)
			}
		}
	}
	cn.stop()
	return told
}

func notify(told []func(string), reason string) {
	for _, f := range told {
		f(reason)
	}
}

// disconnect drops a connection for reason and tells every extension's
// OnDisconnect; once.
func (c *Cache) disconnect(cn *conn, reason string) {
	c.mu.Lock()
	if cn.closed != "" {
		c.mu.Unlock()
		return
	}
	told := c.closeLocked(cn, reason, "")
	c.mu.Unlock()
	c.opts.Log.Info("disconnected from hosted cluster", "hostedCluster", cn.key.String(), "reason", reason)
	notify(told, reason)
}

// healthCheck probes the cluster every ProbeInterval until the entry is
// disconnected.
func (c *Cache) healthCheck(cn *conn, kube kubernetes.Interface) {
	ticker := time.NewTicker(c.opts.ProbeInterval)
	defer ticker.Stop()
	failures := 0
	for {
		select {
		case <-cn.run.Done():
			return
		case <-ticker.C:
		}
		err := c.probe(cn.run, kube)
		switch {
		case err == nil:
			failures = 0
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			c.disconnect(cn, fmt.Sprintf("health check: %v", err))
			return
		case cn.run.Err() != nil:
			return
		default:
			failures++
			if failures >= c.opts.FailureThreshold {
				c.disconnect(cn, fmt.Sprintf("health check failed %d times in a row, last: %v", failures, err))
				return
			}
		}
	}
}

func (c *Cache) probe(ctx context.Context, kube kubernetes.Interface) error {
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
