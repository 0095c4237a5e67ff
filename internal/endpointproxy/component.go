package endpointproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Name is the component: `hypershift component kube-apiserver-proxy`.
const Name = "kube-apiserver-proxy"

// healthInterval is how often each API server's /readyz is checked.
const healthInterval = 500 * time.Millisecond

// Config is the proxy's command line. The control-plane renderer sets it
// and puts Args into the spec; Parse reads the same flags back when the
// runtime starts the proxy. Every field's default is its zero value.
type Config struct {
	// Listen is the published endpoint, HOST:PORT.
	Listen string
	// HealthListen serves the proxy's own /readyz; empty: none.
	HealthListen string
	// BackendCAFile is the CA that signs the API servers' serving
	// certificates; empty: backends are not health-checked.
	BackendCAFile string
	// Backends are the API servers, HOST:PORT each.
	Backends []string
	// InternalListen, when set, is a loopback endpoint for the control
	// plane's own clients (controllers, the operator): not counted as
	// activity, never held.
	InternalListen string
	// WakeOnRequest holds client connections while no API server is ready
	// (the control plane sleeps) instead of closing them, up to HoldMax at
	// once for HoldTimeout each (zero: the defaults).
	WakeOnRequest bool
	HoldMax       int
	HoldTimeout   time.Duration
}

// Args renders the configuration as the proxy's flags, leaving out those
// at their defaults.
func (c Config) Args() []string {
	var args []string
	add := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name+"="+value)
		}
	}
	add("listen", c.Listen)
	add("health-listen", c.HealthListen)
	add("backend-ca-file", c.BackendCAFile)
	for _, b := range c.Backends {
		add("backend", b)
	}
	add("internal-listen", c.InternalListen)
	if c.WakeOnRequest {
		args = append(args, "--wake-on-request")
	}
	if c.HoldMax != 0 {
		add("hold-max", strconv.Itoa(c.HoldMax))
	}
	if c.HoldTimeout != 0 {
		add("hold-timeout", c.HoldTimeout.String())
	}
	return args
}

// Parse reads the proxy's flags.
func Parse(args []string) (Config, error) {
	var c Config
	fs := flag.NewFlagSet(Name, flag.ContinueOnError)
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to listen on")
	fs.StringVar(&c.HealthListen, "health-listen", c.HealthListen, "address of the proxy's own /readyz (optional)")
	fs.StringVar(&c.BackendCAFile, "backend-ca-file", c.BackendCAFile, "CA that signs the API servers' serving certificates")
	fs.Var((*backendList)(&c.Backends), "backend", "API server address (repeat)")
	fs.StringVar(&c.InternalListen, "internal-listen", c.InternalListen, "address for the control plane's own clients: not counted as activity, never held (optional)")
	fs.BoolVar(&c.WakeOnRequest, "wake-on-request", c.WakeOnRequest, "hold client connections while no API server is ready, instead of closing them")
	fs.IntVar(&c.HoldMax, "hold-max", c.HoldMax, "most connections held at once (default 64)")
	fs.DurationVar(&c.HoldTimeout, "hold-timeout", c.HoldTimeout, "how long a connection is held (default 90s)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Run is the proxy process: the stable endpoint of replicated API servers,
// routing to those whose /readyz passes, until SIGTERM or SIGINT.
func Run(ctx context.Context, c Config) error {
	check, err := readyzCheck(c.BackendCAFile)
	if err != nil {
		return err
	}
	p, err := New(c.Backends, check)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	l, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	if c.WakeOnRequest {
		p.Hold(c.HoldMax, c.HoldTimeout)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if c.InternalListen != "" {
		il, err := net.Listen("tcp", c.InternalListen)
		if err != nil {
			_ = l.Close()
			return fmt.Errorf("%s: internal endpoint: %w", Name, err)
		}
		go func() { _ = p.ServeInternal(ctx, il) }()
	}
	go p.HealthChecks(ctx, healthInterval)
	if c.HealthListen != "" {
		go serveHealth(ctx, c.HealthListen, p)
	}
	return p.Serve(ctx, l)
}

// readyzCheck probes an API server's /readyz, verifying it with caFile.
// The file is read again when it changes (checked on every probe by size
// and modification time), so a root-CA rotation's new bundle applies
// without restarting the proxy, which would drop every client connection.
// Connections are kept between checks (a new TLS handshake every interval
// costs a loaded API server, and the proxy, CPU), and dropped with the
// bundle they were verified with.
func readyzCheck(caFile string) (func(context.Context, string) error, error) {
	if caFile == "" {
		return nil, nil
	}
	trust := &reloadingPool{path: caFile}
	if _, err := trust.get(); err != nil {
		return nil, err
	}
	var (
		mu     sync.Mutex
		client *http.Client
		poolOf *x509.CertPool
	)
	clientFor := func(pool *x509.CertPool) *http.Client {
		mu.Lock()
		defer mu.Unlock()
		if pool != poolOf {
			if client != nil {
				client.CloseIdleConnections()
			}
			client = &http.Client{Transport: &http.Transport{
				TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
				MaxIdleConnsPerHost: 1,
				IdleConnTimeout:     time.Minute,
			}}
			poolOf = pool
		}
		return client
	}
	return func(ctx context.Context, backend string) error {
		pool, err := trust.get()
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+backend+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := clientFor(pool).Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %d: %w", resp.StatusCode, ErrNotReady)
		}
		return nil
	}, nil
}

// reloadingPool is a CA bundle file's pool, read again when the file's
// size or modification time changes; a bad new file keeps the last pool.
type reloadingPool struct {
	path string

	mu      sync.Mutex
	size    int64
	modTime time.Time
	pool    *x509.CertPool
}

func (r *reloadingPool) get() (*x509.CertPool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	info, err := os.Stat(r.path)
	if err != nil {
		if r.pool != nil {
			return r.pool, nil
		}
		return nil, fmt.Errorf("read backend CA: %w", err)
	}
	if r.pool != nil && info.Size() == r.size && info.ModTime().Equal(r.modTime) {
		return r.pool, nil
	}
	ca, err := os.ReadFile(r.path)
	if err != nil {
		return r.orErr(fmt.Errorf("read backend CA: %w", err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return r.orErr(errors.New("backend CA file holds no certificate"))
	}
	r.pool, r.size, r.modTime = pool, info.Size(), info.ModTime()
	return pool, nil
}

func (r *reloadingPool) orErr(err error) (*x509.CertPool, error) {
	if r.pool != nil {
		return r.pool, nil
	}
	return nil, err
}

func serveHealth(ctx context.Context, addr string, p *Proxy) {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "no ready API server", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	serveActivity(mux, p)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	_ = srv.ListenAndServe()
}

type backendList []string

func (b *backendList) String() string { return strings.Join(*b, ",") }

func (b *backendList) Set(v string) error {
	*b = append(*b, v)
	return nil
}
