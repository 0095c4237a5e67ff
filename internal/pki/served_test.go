package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
)

// TestServedChainIsReadNotTrusted: ServedChain returns whatever a server
// presents, an interceptor's chain included; VerifyServer accepts it only
// against the CA that issued it, for the names it was issued for, and
// refuses a client-only certificate served as a server's.
func TestServedChainIsReadNotTrusted(t *testing.T) {
	ours, err := NewCA("ours")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := NewCA("interceptor")
	if err != nil {
		t.Fatal(err)
	}
	serve := func(ca KeyPair, req CertRequest) string {
		t.Helper()
		leaf, err := Issue(ca, req)
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.(*tls.Conn).Handshake()
				_ = c.Close()
			}
		}()
		return l.Addr().String()
	}
	server := CertRequest{CommonName: "api", DNSNames: []string{"api.example"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}
	roots := func(ca KeyPair) *x509.CertPool {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca.CertPEM) {
			t.Fatal("CA PEM")
		}
		return pool
	}

	cases := []struct {
		name    string
		addr    string
		roots   *x509.CertPool
		dnsName string
		ok      bool
	}{
		{"our CA's server", serve(ours, server), roots(ours), "", true},
		{"our CA's server, by its name", serve(ours, server), roots(ours), "api.example", true},
		{"our CA's server, by another name", serve(ours, server), roots(ours), "other.example", false},
		{"an interceptor's server", serve(foreign, server), roots(ours), "", false},
		{"a client certificate served", serve(ours, CertRequest{CommonName: "admin", Client: true}), roots(ours), "", false},
	}
	for _, tc := range cases {
		chain, err := ServedChain(t.Context(), tc.addr)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := VerifyServer(chain, tc.roots, tc.dnsName); (err == nil) != tc.ok {
			t.Errorf("%s: VerifyServer = %v, want ok=%t", tc.name, err, tc.ok)
		}
	}
	if err := VerifyServer(nil, roots(ours), ""); err == nil {
		t.Error("an empty chain verified")
	}
}
