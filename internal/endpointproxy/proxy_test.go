package endpointproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// listenLoopback listens on a free port of 127.0.0.1.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// echoServer answers each line with its name.
func echoServer(t *testing.T, name string) (addr string, stop func()) {
	t.Helper()
	l := listenLoopback(t)
	go serveEcho(l, name)
	return l.Addr().String(), func() { l.Close() }
}

// serveEcho answers each line of every connection l accepts with name,
// until l is closed.
func serveEcho(l net.Listener, name string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				fmt.Fprintf(c, "%s\n", name)
			}
		}()
	}
}

// helloHead is the start of a TLS ClientHello: a handshake record (22) of
// version 3.1, its length, and the handshake type client_hello (1). The
// public listener lets through only connections that start so; these
// tests' line protocol follows it (the echo server reads it as part of the
// first line).
var helloHead = []byte{22, 3, 1, 0, 0x40, 1}

func ask(t *testing.T, addr string) (string, error) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_, _ = c.Write(helloHead)
	fmt.Fprintln(c, "hi")
	return bufio.NewReader(c).ReadString('\n')
}

func TestFailsOverAndSpreads(t *testing.T) {
	a, stopA := echoServer(t, "a")
	b, stopB := echoServer(t, "b")
	defer stopB()
	p, err := New([]string{a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := listenLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Serve(ctx, l) }()

	seen := map[string]int{}
	for range 10 {
		got, err := ask(t, l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		seen[got]++
	}
	if seen["a\n"] == 0 || seen["b\n"] == 0 {
		t.Errorf("connections not spread over both backends: %v", seen)
	}

	stopA()
	for i := range 10 {
		got, err := ask(t, l.Addr().String())
		if err != nil || got != "b\n" {
			t.Fatalf("request %d with a down: %q, %v; want b", i, got, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

func TestNoBackends(t *testing.T) {
	if _, err := New(nil, nil); err == nil {
		t.Error("a proxy without backends was accepted")
	}
}

func TestPrefersHealthyBackends(t *testing.T) {
	a, stopA := echoServer(t, "a")
	defer stopA()
	b, stopB := echoServer(t, "b")
	defer stopB()
	// a accepts connections but fails its health check.
	p, err := New([]string{a, b}, func(_ context.Context, backend string) error {
		if backend == a {
			return fmt.Errorf("not ready")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if p.Ready() {
		t.Error("ready before any health check ran")
	}
	go p.HealthChecks(ctx, 10*time.Millisecond)
	for !p.Ready() {
		time.Sleep(5 * time.Millisecond)
	}
	l := listenLoopback(t)
	go p.Serve(ctx, l)
	for i := range 6 {
		if got, err := ask(t, l.Addr().String()); err != nil || got != "b\n" {
			t.Fatalf("request %d: %q, %v; want the healthy backend b", i, got, err)
		}
	}
}

// A backend that answers "not ready" or refuses the connection is out at
// once; one whose checks go unanswered keeps its traffic until
// failThreshold of them in a row; one check passing brings a backend in.
func TestHealthCheckVerdicts(t *testing.T) {
	timeout := context.DeadlineExceeded
	refused := &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	notReady := fmt.Errorf("readyz: 500: %w", ErrNotReady)
	for _, tc := range []struct {
		name string
		errs []error
		want []bool
	}{
		{"never answered", []error{timeout, timeout, timeout}, []bool{false, false, false}},
		{"ready, then late answers", []error{nil, timeout, timeout, nil, timeout, timeout, timeout}, []bool{true, true, true, true, true, true, false}},
		{"ready, then not ready", []error{nil, notReady, nil}, []bool{true, false, true}},
		{"ready, then refused", []error{nil, refused}, []bool{true, false}},
		{"a late answer then not ready", []error{nil, timeout, notReady, timeout, nil}, []bool{true, true, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, unanswered := false, 0
			for i, err := range tc.errs {
				ready, unanswered = judge(ready, unanswered, err)
				if ready != tc.want[i] {
					t.Fatalf("after check %d (%v): ready %t, want %t", i, err, ready, tc.want[i])
				}
			}
		})
	}
}

// A client's connection stays with the backend it was opened to: once that
// backend has been out for cutAfter while another is in, the proxy closes
// the connection so that the client connects again, to the ready one; while
// no backend is in, nothing is cut.
func TestCutsConnectionsOfABackendGoneOut(t *testing.T) {
	a, stopA := echoServer(t, "a")
	defer stopA()
	b, stopB := echoServer(t, "b")
	defer stopB()
	var aReady, bReady atomic.Bool
	aReady.Store(true)
	p, err := New([]string{a, b}, func(_ context.Context, backend string) error {
		if (backend == a && aReady.Load()) || (backend == b && bReady.Load()) {
			return nil
		}
		return ErrNotReady
	})
	if err != nil {
		t.Fatal(err)
	}
	p.cutAfter = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.HealthChecks(ctx, 10*time.Millisecond)
	for !p.Ready() {
		time.Sleep(5 * time.Millisecond)
	}
	l := listenLoopback(t)
	go p.Serve(ctx, l)

	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	_, _ = conn.Write(helloHead)
	fmt.Fprintln(conn, "hi")
	if got, err := r.ReadString('\n'); err != nil || got != "a\n" {
		t.Fatalf("first answer %q, %v; want a", got, err)
	}

	// a goes out with no other backend in: the connection is kept.
	aReady.Store(false)
	time.Sleep(5 * p.cutAfter)
	fmt.Fprintln(conn, "still there?")
	if got, err := r.ReadString('\n'); err != nil || got != "a\n" {
		t.Fatalf("with no backend in, the connection to a answered %q, %v; want it kept", got, err)
	}

	// b comes in: the connection to a is closed.
	bReady.Store(true)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	var timeout net.Error
	if got, err := r.ReadString('\n'); err == nil || (errors.As(err, &timeout) && timeout.Timeout()) {
		t.Fatalf("the connection to a, out while b is in, stayed open (read %q, %v)", got, err)
	}
	if got, err := ask(t, l.Addr().String()); err != nil || got != "b\n" {
		t.Fatalf("a new connection: %q, %v; want b", got, err)
	}
}
