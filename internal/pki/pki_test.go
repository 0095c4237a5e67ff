package pki

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureControlPlaneChains(t *testing.T) {
	store := FileStore{Dir: filepath.Join(t.TempDir(), "pki")}
	cp, err := EnsureControlPlane(store, ControlPlaneOptions{
		APIServerIPs:      []net.IP{net.ParseIP("192.0.2.10")},
		APIServerDNSNames: []string{"api.example.test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		leaf   KeyPair
		ca     KeyPair
		usage  x509.ExtKeyUsage
		cn     string
		org    string
		verify string // host name to verify for serving certs
	}{
		{"apiserver serving", cp.KubeAPIServer, cp.RootCA, x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "api.example.test"},
		{"apiserver serving by IP", cp.KubeAPIServer, cp.RootCA, x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "192.0.2.10"},
		{"etcd serving", cp.EtcdServer, cp.EtcdCA, x509.ExtKeyUsageServerAuth, "etcd-server", "", "127.0.0.1"},
		{"etcd client", cp.EtcdClient, cp.EtcdCA, x509.ExtKeyUsageClientAuth, "etcd-client", "", ""},
		{"admin", cp.Admin, cp.ClientCA, x509.ExtKeyUsageClientAuth, "system:admin", "system:masters", ""},
		{"controller manager", cp.KubeControllerManager, cp.ClientCA, x509.ExtKeyUsageClientAuth, "system:kube-controller-manager", "", ""},
		{"scheduler", cp.KubeScheduler, cp.ClientCA, x509.ExtKeyUsageClientAuth, "system:kube-scheduler", "", ""},
		{"kubelet client", cp.KubeAPIServerKubeletClient, cp.ClientCA, x509.ExtKeyUsageClientAuth, "kube-apiserver-kubelet-client", "system:masters", ""},
		{"front proxy", cp.FrontProxyClient, cp.FrontProxyCA, x509.ExtKeyUsageClientAuth, FrontProxyClientCommonName, "", ""},
		{"konnectivity server", cp.KonnectivityServer, cp.KonnectivityCA, x509.ExtKeyUsageServerAuth, "konnectivity-server", "", "api.example.test"},
		{"konnectivity server by IP", cp.KonnectivityServer, cp.KonnectivityCA, x509.ExtKeyUsageServerAuth, "konnectivity-server", "", "192.0.2.10"},
		{"konnectivity agent", cp.KonnectivityAgent, cp.KonnectivityCA, x509.ExtKeyUsageClientAuth, KonnectivityAgentCommonName, "", ""},
		{"konnectivity server client", cp.KonnectivityServerClient, cp.ClientCA, x509.ExtKeyUsageClientAuth, KonnectivityServerUser, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaf, err := ParseCertificate(tt.leaf.CertPEM)
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(tt.ca.CertPEM)
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tt.verify, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("does not verify against its CA: %v", err)
			}
			if leaf.Subject.CommonName != tt.cn {
				t.Errorf("CN %q, want %q", leaf.Subject.CommonName, tt.cn)
			}
			if got := strings.Join(leaf.Subject.Organization, ","); got != tt.org {
				t.Errorf("O %q, want %q", got, tt.org)
			}
		})
	}

	// A second CA of the same name from another control plane does not
	// verify this one's certificates.
	other, err := EnsureControlPlane(FileStore{Dir: filepath.Join(t.TempDir(), "other")}, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(other.ClientCA.CertPEM)
	admin, _ := ParseCertificate(cp.Admin.CertPEM)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("one control plane's admin certificate verifies against another's client CA")
	}
}

func TestEnsureControlPlaneIsIdempotentAndPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first, err := EnsureControlPlane(FileStore{Dir: dir}, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A lost leaf is reissued by the CA already trusted; the rest is kept.
	if err := os.Remove(filepath.Join(dir, AdminName+".crt")); err != nil {
		t.Fatal(err)
	}
	second, err := EnsureControlPlane(FileStore{Dir: dir}, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(first.RootCA.CertPEM) != string(second.RootCA.CertPEM) || string(first.EtcdServer.KeyPEM) != string(second.EtcdServer.KeyPEM) {
		t.Error("existing key pairs were replaced")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(first.ClientCA.CertPEM)
	admin, _ := ParseCertificate(second.Admin.CertPEM)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("reissued leaf does not verify against the original CA: %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), info.Mode().Perm())
		}
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("pki dir mode: %v %v, want 0700", info.Mode().Perm(), err)
	}
}

func TestCACertHash(t *testing.T) {
	ca, err := NewCA("test")
	if err != nil {
		t.Fatal(err)
	}
	h, err := CACertHash(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Errorf("hash %q is not sha256:<64 hex>", h)
	}
	if _, err := CACertHash([]byte("not a certificate")); err == nil {
		t.Error("hash of garbage succeeded")
	}
}

// TestEnsureControlPlaneAddsKonnectivity: a PKI made before the Konnectivity
// tunnel existed gets its CA and both leaves, and keeps everything else.
func TestEnsureControlPlaneAddsKonnectivity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first, err := EnsureControlPlane(FileStore{Dir: dir}, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{KonnectivityCAName, KonnectivityServerName, KonnectivityAgentName} {
		for _, ext := range []string{".crt", ".key"} {
			if err := os.Remove(filepath.Join(dir, name+ext)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A read-only store (the HostedControlPlane controller's) waits for
	// the owner to add them.
	if _, err := EnsureControlPlane(readOnly{FileStore{Dir: dir}}, ControlPlaneOptions{}); !errors.Is(err, ErrMissing) {
		t.Fatalf("read-only ensure of a PKI without Konnectivity: %v, want ErrMissing", err)
	}
	second, err := EnsureControlPlane(FileStore{Dir: dir}, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(first.RootCA.CertPEM) != string(second.RootCA.CertPEM) || string(first.KubeAPIServer.KeyPEM) != string(second.KubeAPIServer.KeyPEM) {
		t.Error("existing key pairs were replaced")
	}
	if string(first.KonnectivityCA.CertPEM) == string(second.KonnectivityCA.CertPEM) {
		t.Error("the removed Konnectivity CA was not made anew")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(second.KonnectivityCA.CertPEM)
	agent, err := ParseCertificate(second.KonnectivityAgent.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("new agent certificate does not verify against the new CA: %v", err)
	}
}

// readOnly refuses to create, like a read-only SecretStore.
type readOnly struct{ Store }

func (readOnly) Put(name string, _ KeyPair) error { return fmt.Errorf("%s: %w", name, ErrMissing) }
