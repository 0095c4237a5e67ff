// Package health serves the /healthz of a node daemon's own processes
// (the pod network, the CSI plugin): what their readiness probes ask.
package health

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// Serve answers /healthz on addr until the server is closed: ok while
// ready says nil, 503 with its error otherwise. The server's Addr is the
// address it listens on.
func Serve(addr string, ready func() error) (*http.Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Addr: l.Addr().String(), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "health:", err)
		}
	}()
	return srv, nil
}
