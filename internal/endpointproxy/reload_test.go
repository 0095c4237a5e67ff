package endpointproxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"hypershift.dev/internal/pki"
)

// A root-CA rotation rewrites the backend CA file in place: the proxy's
// health checks must verify with the new bundle without a restart, and a
// broken file must not leave them without one.
func TestBackendCAFileIsReadAgainWhenItChanges(t *testing.T) {
	oldCA, err := pki.NewCA("old")
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCA("new")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, oldCA.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &reloadingPool{path: path}
	first, err := r.get()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.get(); again != first {
		t.Fatal("an unchanged file was parsed again")
	}
	if err := os.WriteFile(path, append(append([]byte(nil), oldCA.CertPEM...), newCA.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	both, err := r.get()
	if err != nil || both == first {
		t.Fatalf("a changed file was not read again (%v)", err)
	}
	if !both.Equal(poolOf(t, oldCA.CertPEM, newCA.CertPEM)) {
		t.Fatal("the new pool does not hold both CAs")
	}
	if err := os.WriteFile(path, []byte("not a certificate, and of another size"), 0o600); err != nil {
		t.Fatal(err)
	}
	if kept, err := r.get(); err != nil || kept != both {
		t.Fatalf("a broken file replaced the last good pool (%v)", err)
	}
}

func poolOf(t *testing.T, pems ...[]byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	for _, pem := range pems {
		if !p.AppendCertsFromPEM(pem) {
			t.Fatal("bad PEM")
		}
	}
	return p
}

// The /readyz check against a real TLS server: 200 passes, any other
// answer is ErrNotReady, a closed port is a refusal; checks share one
// kept-alive connection.
func TestReadyzCheck(t *testing.T) {
	ca, err := pki.NewCA("api")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := pki.Issue(ca, pki.CertRequest{CommonName: "api", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var status, conns atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	check, err := readyzCheck(caFile)
	if err != nil {
		t.Fatal(err)
	}
	backend := srv.Listener.Addr().String()
	for range 3 {
		if err := check(t.Context(), backend); err != nil {
			t.Fatalf("a ready server: %v", err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("three checks opened %d connections, want one kept alive", n)
	}
	status.Store(http.StatusInternalServerError)
	if err := check(t.Context(), backend); !errors.Is(err, ErrNotReady) {
		t.Errorf("a server answering 500: %v, want ErrNotReady", err)
	}
	srv.Close()
	if err := check(t.Context(), backend); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("a closed port: %v, want a refusal", err)
	}
}
