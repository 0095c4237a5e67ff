package endpointproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Defaults of holding connections while the control plane sleeps.
const (
	// DefaultHoldMax bounds the connections held at once; more are closed.
	DefaultHoldMax = 64
	// DefaultHoldTimeout is how long a held connection waits for an API
	// server before it is closed.
	DefaultHoldTimeout = 90 * time.Second
	// readyPoll is how often a held connection looks for a ready API
	// server (the health checks themselves run every healthInterval).
	readyPoll = 50 * time.Millisecond
)

// Activity is what the proxy saw of clients on its public listener: the
// operator reads it (GET /activity on the health port, loopback only) to
// hibernate an idle control plane and to wake a sleeping one.
type Activity struct {
	// LastActivity is when a client last connected or sent or received
	// bytes; zero when none since the proxy started.
	LastActivity time.Time `json:"lastActivity,omitzero"`
	// Waiting counts connections held for a sleeping control plane: a
	// wake request.
	Waiting int32 `json:"waiting"`
	// Connections counts open client connections.
	Connections int32 `json:"connections"`
}

// activity is the proxy's live counters.
type activity struct {
	last        atomic.Int64 // unix nanoseconds
	waiting     atomic.Int32
	connections atomic.Int32
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

func (a *activity) snapshot() Activity {
	out := Activity{Waiting: a.waiting.Load(), Connections: a.connections.Load()}
	if n := a.last.Load(); n != 0 {
		out.LastActivity = time.Unix(0, n).UTC()
	}
	return out
}

// Activity reports what the proxy saw of clients.
func (p *Proxy) Activity() Activity { return p.act.snapshot() }

// Hold makes the proxy hold client connections while no API server is
// ready (the control plane sleeps, or starts): up to max at once, each for
// at most timeout, instead of closing them. A held connection counts as
// activity, which is what wakes the control plane.
func (p *Proxy) Hold(maxHeld int, timeout time.Duration) {
	if maxHeld <= 0 {
		maxHeld = DefaultHoldMax
	}
	if timeout <= 0 {
		timeout = DefaultHoldTimeout
	}
	p.holdMax, p.holdTimeout = int32(maxHeld), timeout
}

// awaitBackend holds a client connection until an API server is ready; it
// reports false when the connection was given up (too many held, timeout,
// shutdown), after logging why.
func (p *Proxy) awaitBackend(ctx context.Context, client net.Conn) bool {
	if p.holdMax == 0 || p.Ready() {
		return true
	}
	if n := p.act.waiting.Add(1); n > p.holdMax {
		p.act.waiting.Add(-1)
		log.Printf("closing connection from %s: %d connections are already held while the control plane wakes (the maximum)", client.RemoteAddr(), p.holdMax)
		return false
	}
	defer p.act.waiting.Add(-1)
	log.Printf("holding connection from %s until the control plane is ready", client.RemoteAddr())
	deadline := time.NewTimer(p.holdTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for !p.Ready() {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			log.Printf("closing held connection from %s: no API server became ready within %s", client.RemoteAddr(), p.holdTimeout)
			return false
		case <-tick.C:
		}
	}
	return true
}

// clientHelloTimeout bounds the wait for a client's first bytes on the
// public listener.
const clientHelloTimeout = 10 * time.Second

// tlsClientHello reads, within clientHelloTimeout, the start of what a
// client on the public listener sends and returns a reader that gives it
// again: it must be a TLS record of the handshake protocol (22), version
// 3.x, carrying a ClientHello (1) — what every client of an API server
// sends first. Only such a client counts as activity and may be held: a
// bare TCP connection, a port scan or plain HTTP neither wakes nor keeps
// awake a hibernated control plane, and is closed.
func tlsClientHello(client net.Conn) (io.Reader, error) {
	_ = client.SetReadDeadline(time.Now().Add(clientHelloTimeout))
	r := bufio.NewReader(client)
	head, err := r.Peek(6)
	_ = client.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, fmt.Errorf("no TLS ClientHello from %s: %w", client.RemoteAddr(), err)
	}
	if head[0] != 22 || head[1] != 3 || head[5] != 1 {
		return nil, fmt.Errorf("no TLS ClientHello from %s: the first bytes are % x", client.RemoteAddr(), head)
	}
	return r, nil
}

// activeWriter marks activity on every write through it.
type activeWriter struct {
	w   io.Writer
	act *activity
}

func (a activeWriter) Write(b []byte) (int, error) {
	a.act.touch()
	return a.w.Write(b)
}

// serveActivity adds GET /activity and GET /healthz to the health server.
func serveActivity(mux *http.ServeMux, p *Proxy) {
	mux.HandleFunc("/activity", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p.Activity())
	})
	// The proxy itself is healthy while it runs: while the control plane
	// sleeps no API server is ready, and /readyz fails by design.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
}
