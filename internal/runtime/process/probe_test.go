package process

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"hypershift.dev/internal/runtime"
)

func TestFailedChecks(t *testing.T) {
	tests := []struct{ body, want string }{
		{"[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]poststarthook/rbac failed\nreadyz check failed\n", "[-]etcd failed: reason withheld; [-]poststarthook/rbac failed"},
		{"no ready API server\n", "no ready API server"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := failedChecks(tt.body); got != tt.want {
			t.Errorf("failedChecks(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// TestProbeKeepsItsConnection: probes share one connection, opening a new
// one every reconnectEvery probes (so the certificate served now is
// verified again), and after the component closed the connection.
func TestProbeKeepsItsConnection(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	p := newProber(runtime.Probe{Scheme: "https", Host: u.Hostname(), Port: port, Path: "/readyz", CAPEM: caPEM})
	defer p.close()
	const probes = 3 * reconnectEvery
	for range probes {
		if err := p.probe(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got > probes/reconnectEvery+1 {
		t.Errorf("%d probes opened %d connections, want at most %d", probes, got, probes/reconnectEvery+1)
	}
	srv.CloseClientConnections()
	// At most one probe fails on the closed connection; then a new one.
	if err := p.probe(t.Context()); err != nil {
		if err := p.probe(t.Context()); err != nil {
			t.Errorf("probe after the server closed its connections: %v", err)
		}
	}
}
