package endpointproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// sleepingBackend is an address where nothing listens until wake is called.
func sleepingBackend(t *testing.T) (addr string, wake func(name string) func()) {
	t.Helper()
	l := listenLoopback(t)
	addr = l.Addr().String()
	l.Close()
	return addr, func(name string) func() {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		go serveEcho(l, name)
		return func() { l.Close() }
	}
}

func dialCheck(ctx context.Context, backend string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", backend)
	if err != nil {
		return err
	}
	return c.Close()
}

// startHolding runs a proxy that holds connections over backend.
func startHolding(t *testing.T, backend string, maxHeld int, timeout time.Duration) (*Proxy, string) {
	t.Helper()
	p, err := New([]string{backend}, dialCheck)
	if err != nil {
		t.Fatal(err)
	}
	p.Hold(maxHeld, timeout)
	l := listenLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = p.Serve(ctx, l) }()
	go p.HealthChecks(ctx, 50*time.Millisecond)
	return p, l.Addr().String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHoldsAConnectionAcrossAWake: a client that connects while no API
// server runs is held, counted as a wake request, and passed through once
// the backend is up; its bytes arrive.
func TestHoldsAConnectionAcrossAWake(t *testing.T) {
	backend, wake := sleepingBackend(t)
	p, addr := startHolding(t, backend, 4, time.Minute)
	before := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write(helloHead)
	fmt.Fprintln(c, "hi") // sent while the backend sleeps
	waitFor(t, "the connection to be held", func() bool { return p.Activity().Waiting == 1 })
	if a := p.Activity(); a.LastActivity.Before(before) {
		t.Fatalf("a held connection is activity: last activity %s is before %s", a.LastActivity, before)
	}
	stop := wake("awake")
	defer stop()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "awake\n" {
		t.Fatalf("answer through the held connection = %q, %v; want awake", got, err)
	}
	if w := p.Activity().Waiting; w != 0 {
		t.Errorf("waiting = %d after the wake, want 0", w)
	}
}

// TestHoldIsBounded: beyond the maximum, and after the timeout, held
// connections are closed.
func TestHoldIsBounded(t *testing.T) {
	backend, _ := sleepingBackend(t)
	p, addr := startHolding(t, backend, 1, 300*time.Millisecond)
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	_, _ = first.Write(helloHead)
	waitFor(t, "the first connection to be held", func() bool { return p.Activity().Waiting == 1 })
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	_, _ = second.Write(helloHead)
	_ = second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := second.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("second connection beyond the maximum: read = %v, want EOF (closed)", err)
	}
	_ = first.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("held connection after the timeout: read = %v, want EOF (closed)", err)
	}
	waitFor(t, "no connection held", func() bool { return p.Activity().Waiting == 0 })
}

// TestInternalIsNotActivity: the control plane's own connections do not
// keep it awake.
func TestInternalIsNotActivity(t *testing.T) {
	addr, stop := echoServer(t, "a")
	defer stop()
	p, err := New([]string{addr}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := listenLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = p.ServeInternal(ctx, l) }()
	if got, err := ask(t, l.Addr().String()); err != nil || got != "a\n" {
		t.Fatalf("internal = %q, %v", got, err)
	}
	if a := p.Activity(); !a.LastActivity.IsZero() {
		t.Errorf("internal connection counted as activity at %s", a.LastActivity)
	}
}

// TestOnlyATLSClientHelloIsActivity: a connection to the public listener
// counts as activity — wakes a sleeping control plane, is held — only once
// it has sent the start of a TLS ClientHello, as crypto/tls does. A bare
// TCP connection and plain HTTP are neither counted nor held.
func TestOnlyATLSClientHelloIsActivity(t *testing.T) {
	backend, _ := sleepingBackend(t)
	p, addr := startHolding(t, backend, 4, time.Minute)

	bare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	fmt.Fprint(plain, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	_ = plain.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := plain.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("plain HTTP: read = %v, want EOF (closed)", err)
	}
	time.Sleep(200 * time.Millisecond)
	if a := p.Activity(); !a.LastActivity.IsZero() || a.Waiting != 0 || a.Connections != 0 {
		t.Fatalf("a bare connection and plain HTTP counted: %+v", a)
	}

	tlsConn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tlsConn.Close()
	go func() {
		_ = tls.Client(tlsConn, &tls.Config{ServerName: "kube-apiserver", MinVersion: tls.VersionTLS12}).Handshake()
	}()
	waitFor(t, "the TLS client to be held", func() bool { return p.Activity().Waiting == 1 })
	if a := p.Activity(); a.LastActivity.IsZero() {
		t.Errorf("a TLS client is not activity: %+v", a)
	}
}
