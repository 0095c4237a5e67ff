// Package dashboard serves a web view of the fleet: a live table of the
// hosted clusters and a page per cluster, from the management cluster with
// the authority of the kubeconfig it was given, and the changes of the
// command line (create, scale, hibernate and resume, upgrade, rotate CA)
// made with that same authority. Its assets are embedded in the binary;
// nothing is downloaded.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/dump"
	"hypershift.dev/internal/fleetmetrics"
	"hypershift.dev/internal/scheme"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Config reaches the management cluster.
	Config *rest.Config
	// SampleEvery is how often the charts get a point (default 15 s).
	SampleEvery time.Duration
	Log         logr.Logger
}

// Server is the dashboard.
type Server struct {
	cache   cache.Cache
	client  client.Client // uncached: events, admin kubeconfigs and every change
	scraper *fleetmetrics.HostedScraper
	history *history
	every   time.Duration
	token   string
	log     logr.Logger

	mu          sync.Mutex
	subscribers map[chan struct{}]struct{}
	changed     chan struct{}
}

// New connects to the management cluster; Serve starts watching it.
func New(opts Options) (*Server, error) {
	c, err := client.New(opts.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connect to the management cluster: %w", err)
	}
	ca, err := cache.New(opts.Config, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	every := opts.SampleEvery
	if every <= 0 {
		every = 15 * time.Second
	}
	return &Server{
		cache: ca, client: c, scraper: fleetmetrics.NewHostedScraper(c), history: newHistory(),
		every: every, token: NewToken(), log: opts.Log, subscribers: map[chan struct{}]struct{}{}, changed: make(chan struct{}, 1),
	}, nil
}

// Token is what a request must carry (requireToken), new for each
// Server: the URL to print is http://ADDRESS/?token=TOKEN.
func (s *Server) Token() string { return s.token }

// Serve watches the fleet and serves the pages on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := s.cache.Start(ctx); err != nil {
			s.log.Error(err, "watching the management cluster")
		}
	}()
	// A change to any of these objects is a change of some page.
	for _, obj := range []client.Object{&hypershiftv1alpha1.HostedCluster{}, &hypershiftv1alpha1.HostedControlPlane{}, &hypershiftv1alpha1.NodePool{}} {
		inf, err := s.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watch %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.notify() },
			UpdateFunc: func(any, any) { s.notify() },
			DeleteFunc: func(any) { s.notify() },
		}); err != nil {
			return err
		}
	}
	if !s.cache.WaitForCacheSync(ctx) {
		return errors.New("the management cluster's objects could not be listed")
	}
	go s.broadcast(ctx)
	go func() {
		t := time.NewTicker(s.every)
		defer t.Stop()
		s.sample(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample(ctx)
			}
		}
	}()
	srv := &http.Server{Handler: s.Handler(l.Addr()), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		// ctx is done: the shutdown gets a fresh deadline of its own.
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the dashboard's HTTP handler for a listener at addr.
func (s *Server) Handler(addr net.Addr) http.Handler {
	static, _ := fs.Sub(assets, "assets")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", page(static, "index.html"))
	mux.HandleFunc("GET /cluster", page(static, "cluster.html"))
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/fleet", s.serveFleet)
	mux.HandleFunc("GET /api/cluster", s.serveCluster)
	mux.HandleFunc("GET /api/stream", s.serveStream)
	s.operations(mux, addr)
	return guard(addr, requireToken(s.token, addr, mux))
}

func page(static fs.FS, name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, name)
	}
}

func (s *Server) clusters(ctx context.Context) ([]hypershiftv1alpha1.HostedCluster, error) {
	list := &hypershiftv1alpha1.HostedClusterList{}
	if err := s.cache.List(ctx, list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

func (s *Server) controlPlane(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (*hypershiftv1alpha1.HostedControlPlane, error) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	err := s.cache.Get(ctx, client.ObjectKey{Namespace: dump.ControlPlaneNamespace(hc), Name: hc.Name}, hcp)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return hcp, err
}

func (s *Server) fleet(ctx context.Context) (Fleet, error) {
	clusters, err := s.clusters(ctx)
	if err != nil {
		return Fleet{}, err
	}
	return fleetOf(clusters, time.Now()), nil
}

func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request) {
	f, err := s.fleet(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	writeJSON(w, f)
}

func (s *Server) serveCluster(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key := client.ObjectKey{Namespace: r.URL.Query().Get("namespace"), Name: r.URL.Query().Get("name")}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := s.cache.Get(ctx, key, hc); err != nil {
		status := http.StatusBadGateway
		if apierrors.IsNotFound(err) {
			status = http.StatusNotFound
		}
		http.Error(w, err.Error(), status)
		return
	}
	hcp, err := s.controlPlane(ctx, hc)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	pools := &hypershiftv1alpha1.NodePoolList{}
	if err := s.cache.List(ctx, pools, client.InNamespace(hc.Namespace)); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	// Events are read when a page asks: the management cluster's events are
	// many, and a dashboard needs a cluster's only.
	names := map[string]bool{hc.Name: true}
	for _, p := range pools.Items {
		if p.Spec.ClusterName == hc.Name {
			names[p.Name] = true
		}
	}
	// A namespace whose events cannot be read leaves the page without them.
	events, _ := dump.ClusterEvents(ctx, s.client, hc, dump.ControlPlaneNamespace(hc), names)
	writeJSON(w, detailOf(hc, hcp, pools.Items, events, s.history.of(string(hc.UID))))
}

// serveStream is a server-sent event stream: the fleet at once, and again
// after each change (at most one message per debounce interval).
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subscribers[ch] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subscribers, ch)
		s.mu.Unlock()
	}()
	send := func() bool {
		f, err := s.fleet(r.Context())
		if err != nil {
			return true
		}
		data, err := json.Marshal(f)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "event: fleet\ndata: %s\n\n", data); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	if !send() {
		return
	}
	keepalive := time.NewTicker(30 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ch:
			if !send() {
				return
			}
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}

// debounce is the shortest interval between two stream messages: a burst
// of status updates (a create) is one message.
const debounce = 200 * time.Millisecond

// notify marks the fleet changed.
func (s *Server) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// broadcast tells every stream about changes, at most once per debounce.
func (s *Server) broadcast(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
		s.mu.Lock()
		for ch := range s.subscribers {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(debounce):
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
