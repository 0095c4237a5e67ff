// Package endpointproxy is the stable API endpoint of a highly available
// hosted control plane: a TCP proxy in front of its API servers. TLS passes
// through untouched (clients verify the API servers' own certificate), and
// the proxy runs as its own supervised process, so the endpoint keeps
// working while the operator is down.
package endpointproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Timing of backend selection.
const (
	dialTimeout = time.Second
	// A backend that refused a connection is skipped this long, unless every
	// backend is.
	downFor = 2 * time.Second
)

// Health checks, as a load balancer runs them: a backend is in after one
// check passes; it is out at once when it answers that it is not ready or
// refuses the connection, and only after failThreshold checks in a row
// when a check goes unanswered (it timed out, the connection broke): a
// busy API server on a loaded machine, late with an answer, keeps its
// traffic rather than lose it to one that is still starting.
const (
	checkTimeout  = 2 * time.Second
	failThreshold = 3
	// cutAfter: the connections of a backend out this long are closed
	// while another is in, so that their clients connect again, to a
	// ready one (a kept-alive connection stays with the backend it was
	// opened to). An API server that is stopping drains its requests well
	// within this.
	cutAfter = 5 * time.Second
)

// ErrNotReady is what a health check returns when the backend answered
// that it is not ready.
var ErrNotReady = errors.New("not ready")

// Proxy forwards connections to the first backend that accepts them,
// starting round-robin, preferring backends whose health check passes.
type Proxy struct {
	backends []string
	next     atomic.Uint64
	check    func(ctx context.Context, backend string) error

	mu        sync.Mutex
	downUntil map[string]time.Time
	ready     map[string]bool
	// open are the connections forwarded to each backend.
	open map[string]map[*forwarded]struct{}
	// cutAfter is the package's cutAfter (tests shorten it).
	cutAfter time.Duration

	// act counts client activity on the public listener.
	act activity
	// holdMax and holdTimeout bound the connections held while no API
	// server is ready (Hold); zero holdMax: none is held.
	holdMax     int32
	holdTimeout time.Duration
}

// New returns a proxy over backends (host:port). check, when not nil, is
// each backend's health check (see HealthChecks).
func New(backends []string, check func(ctx context.Context, backend string) error) (*Proxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("no backends")
	}
	return &Proxy{
		backends: backends, check: check, downUntil: map[string]time.Time{}, ready: map[string]bool{},
		open: map[string]map[*forwarded]struct{}{}, cutAfter: cutAfter,
	}, nil
}

// Serve accepts client connections on l until ctx ends: they count as
// activity, and are held while no API server is ready when Hold is on.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	return p.serve(ctx, l, true)
}

// ServeInternal accepts the control plane's own connections (its
// controllers, the operator) on l: they are neither counted as activity
// nor held.
func (p *Proxy) ServeInternal(ctx context.Context, l net.Listener) error {
	return p.serve(ctx, l, false)
}

func (p *Proxy) serve(ctx context.Context, l net.Listener, public bool) error {
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		wg.Go(func() { p.handle(ctx, conn, public) })
	}
}

func (p *Proxy) handle(ctx context.Context, client net.Conn, public bool) {
	defer client.Close()
	var src io.Reader = client
	if public {
		hello, err := tlsClientHello(client)
		if err != nil {
			return
		}
		src = hello
		p.act.touch()
		p.act.connections.Add(1)
		defer p.act.connections.Add(-1)
		if !p.awaitBackend(ctx, client) {
			return
		}
	}
	name, backend, err := p.dial(ctx)
	if err != nil {
		return
	}
	defer backend.Close()
	defer p.track(name, &forwarded{client: client, backend: backend})()
	done := make(chan struct{}, 2)
	pipe := func(dst net.Conn, src io.Reader) {
		var w io.Writer = dst
		if public {
			w = activeWriter{w: dst, act: &p.act}
		}
		_, _ = io.Copy(w, src)
		// Half-close so the other direction can finish its response.
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(backend, src)
	go pipe(client, backend)
	select {
	case <-done:
		<-done
	case <-ctx.Done():
	}
}

// forwarded is a client connection and the backend connection it is
// forwarded to.
type forwarded struct{ client, backend net.Conn }

// track records f as forwarded to backend, until the returned func is
// called.
func (p *Proxy) track(backend string, f *forwarded) (untrack func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[backend] == nil {
		p.open[backend] = map[*forwarded]struct{}{}
	}
	p.open[backend][f] = struct{}{}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.open[backend], f)
	}
}

// cut closes the connections forwarded to backend, if another backend is
// in, and says how many it closed.
func (p *Proxy) cut(backend string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	other := false
	for b, ok := range p.ready {
		other = other || (ok && b != backend)
	}
	if !other {
		return 0
	}
	n := 0
	for f := range p.open[backend] {
		_ = f.client.Close()
		_ = f.backend.Close()
		delete(p.open[backend], f)
		n++
	}
	return n
}

// dial tries every backend once, healthy ones first, and returns the one
// it reached.
func (p *Proxy) dial(ctx context.Context) (string, net.Conn, error) {
	start := p.next.Add(1) % uint64(len(p.backends))
	order := make([]string, 0, len(p.backends))
	var down []string
	now := time.Now()
	p.mu.Lock()
	for i := range p.backends {
		b := p.backends[(int(start)+i)%len(p.backends)] //nolint:gosec // start < len(backends)
		if p.downUntil[b].After(now) || (p.check != nil && !p.ready[b]) {
			down = append(down, b)
		} else {
			order = append(order, b)
		}
	}
	p.mu.Unlock()
	var lastErr error
	dialer := net.Dialer{Timeout: dialTimeout}
	for _, b := range append(order, down...) {
		conn, err := dialer.DialContext(ctx, "tcp", b)
		if err == nil {
			return b, conn, nil
		}
		lastErr = err
		p.mu.Lock()
		p.downUntil[b] = time.Now().Add(downFor)
		p.mu.Unlock()
	}
	return "", nil, fmt.Errorf("no backend reachable: %w", lastErr)
}

// HealthChecks checks each backend every interval (each on its own, so a
// slow one delays no other) until ctx ends.
func (p *Proxy) HealthChecks(ctx context.Context, interval time.Duration) {
	if p.check == nil {
		return
	}
	var wg sync.WaitGroup
	for _, b := range p.backends {
		wg.Go(func() { p.checkLoop(ctx, b, interval) })
	}
	wg.Wait()
}

func (p *Proxy) checkLoop(ctx context.Context, backend string, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	ready, unanswered := false, 0
	outSince := time.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		err := p.check(cctx, backend)
		cancel()
		if ctx.Err() != nil {
			return
		}
		ready, unanswered = judge(ready, unanswered, err)
		p.mu.Lock()
		p.ready[backend] = ready
		p.mu.Unlock()
		switch {
		case ready:
			outSince = time.Time{}
		case outSince.IsZero():
			outSince = time.Now()
		case time.Since(outSince) >= p.cutAfter:
			if n := p.cut(backend); n > 0 {
				log.Printf("closed %d connections to %s, not ready for %s (%v): their clients connect again, to a ready API server", n, backend, time.Since(outSince).Round(time.Second), err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// judge is a check's verdict: whether the backend is in after err, given
// whether it was and how many checks in a row went unanswered before.
func judge(ready bool, unanswered int, err error) (bool, int) {
	switch {
	case err == nil:
		return true, 0
	case errors.Is(err, ErrNotReady) || errors.Is(err, syscall.ECONNREFUSED):
		return false, 0
	}
	unanswered++
	return ready && unanswered < failThreshold, unanswered
}

// Ready reports whether some backend passes its health check.
func (p *Proxy) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, ok := range p.ready {
		if ok {
			return true
		}
	}
	return p.check == nil
}
