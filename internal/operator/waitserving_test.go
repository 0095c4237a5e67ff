package operator

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// The plane says ready only once the operator's listeners serve; a manager
// that stops first (its listener failed to bind) is reported as stopped,
// with its error.
func TestWaitServing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serving := l.Addr().String()
	_, port, _ := net.SplitHostPort(serving)

	done := make(chan error, 1)
	if stopped, err := waitServing(t.Context(), done, "0", serving, ":"+port); stopped || err != nil {
		t.Fatalf("waitServing(serving) = %v, %v; want not stopped", stopped, err)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	_ = closed.Close()
	bind := errors.New("listen tcp " + nothing + ": bind: address already in use")
	go func() { time.Sleep(200 * time.Millisecond); done <- bind }()
	if stopped, err := waitServing(t.Context(), done, nothing); !stopped || !errors.Is(err, bind) {
		t.Fatalf("waitServing(nothing listening, manager failed) = %v, %v; want stopped with the manager's error", stopped, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if stopped, err := waitServing(ctx, make(chan error), nothing); stopped || err != nil {
		t.Fatalf("waitServing(ctx ended) = %v, %v; want not stopped", stopped, err)
	}
}
