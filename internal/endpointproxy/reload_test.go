package endpointproxy

import (
	"crypto/x509"
	"os"
	"path/filepath"
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
