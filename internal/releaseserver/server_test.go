package releaseserver

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"

	"hypershift.dev/internal/nodes/join/jointest"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/version"
)

// startServer serves a catalog of a v1.36.3 release and the compiled-in
// one for cluster c, reviewing tokens with apiServer.
func startServer(t *testing.T, c *jointest.Cluster, apiServer *jointest.Server) (*httptest.Server, []byte) {
	t.Helper()
	dir := t.TempDir()
	binary := []byte("#!/bin/false\nrelease v1.36.3\n")
	path := filepath.Join(dir, "kubernetes")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(dir, "hypershift")
	if err := os.WriteFile(self, []byte("compiled in"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(binary)
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(c.ClientCA.CertPEM)
	apiCAs := x509.NewCertPool()
	apiCAs.AppendCertsFromPEM(c.Root.CertPEM)
	apiClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: apiCAs, MinVersion: tls.VersionTLS12}}}
	h := &Handler{
		Releases: release.New(release.Release{Version: "v1.36.3", Binary: path, SHA256: hex.EncodeToString(sum[:])}),
		Authn:    &Authenticator{ClientCAs: clientCAs, Review: SelfSubjectReviewer(apiServer.URL, apiClient)},
		Self:     self,
		Log:      logr.Discard(),
	}
	srv := httptest.NewUnstartedServer(h)
	jointest.StartTLS(t, srv, c.Root, Name, tls.RequestClientCert)
	return srv, binary
}

// nodeCert issues a client certificate of ca in organization org.
func nodeCert(t *testing.T, ca pki.KeyPair, org string) tls.Certificate {
	t.Helper()
	kp, err := pki.Issue(ca, pki.CertRequest{CommonName: "system:node:vm", Organization: []string{org}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestAuthentication(t *testing.T) {
	a, b := jointest.NewCluster(t), jointest.NewCluster(t)
	apiA := a.Genuine(t)
	srv, binary := startServer(t, a, apiA)
	// A cluster whose API server maps the token to a user that is no node.
	c := jointest.NewCluster(t)
	apiC := c.Start(t, c.Root, func(s *jointest.Server) { s.Groups = []string{"system:serviceaccounts", "system:authenticated"} })
	srvC, _ := startServer(t, c, apiC)

	for _, tc := range []struct {
		name   string
		srv    *httptest.Server
		ca     []byte
		cert   *tls.Certificate
		token  string
		path   string
		status int
	}{
		{name: "no credential", status: http.StatusUnauthorized},
		{name: "node certificate", cert: ptr(nodeCert(t, a.ClientCA, GroupNodes)), status: http.StatusOK},
		{name: "certificate of the cluster, not a node", cert: ptr(nodeCert(t, a.ClientCA, "system:masters")), status: http.StatusForbidden},
		{name: "node certificate of another cluster's CA", cert: ptr(nodeCert(t, b.ClientCA, GroupNodes)), status: http.StatusUnauthorized},
		{name: "node certificate signed by the root CA, not the client CA", cert: ptr(nodeCert(t, b.Root, GroupNodes)), status: http.StatusUnauthorized},
		{name: "bootstrap token", token: a.Token.String(), status: http.StatusOK},
		{name: "token of another cluster", token: b.Token.String(), status: http.StatusUnauthorized},
		{name: "token of a user that is no node", srv: srvC, ca: c.Root.CertPEM, token: c.Token.String(), status: http.StatusForbidden},
		{name: "unknown version", token: a.Token.String(), path: Path("v1.35.0"), status: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ca := srv, a.Root.CertPEM
			if tc.srv != nil {
				s, ca = tc.srv, tc.ca
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(ca)
			cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
			if tc.cert != nil {
				cfg.Certificates = []tls.Certificate{*tc.cert}
			}
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			path := tc.path
			if path == "" {
				path = Path("v1.36.3")
			}
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status != http.StatusOK {
				if string(body) == string(binary) {
					t.Fatal("a refused request got the binary")
				}
				return
			}
			sum := sha256.Sum256(binary)
			if string(body) != string(binary) || resp.Header.Get(SHA256Header) != hex.EncodeToString(sum[:]) {
				t.Fatalf("got %q with sha256 %s, want the release and its sha256", body, resp.Header.Get(SHA256Header))
			}
		})
	}
}

func TestServesCompiledInRelease(t *testing.T) {
	a := jointest.NewCluster(t)
	srv, _ := startServer(t, a, a.Genuine(t))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(a.Root.CertPEM)
	cert := nodeCert(t, a.ClientCA, GroupNodes)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	resp, err := client.Get(srv.URL + Path(version.KubernetesVersion))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	sum := sha256.Sum256([]byte("compiled in"))
	if resp.StatusCode != http.StatusOK || string(body) != "compiled in" || resp.Header.Get(SHA256Header) != hex.EncodeToString(sum[:]) {
		t.Fatalf("compiled-in release: %d %q %s", resp.StatusCode, body, resp.Header.Get(SHA256Header))
	}
}

func ptr[T any](v T) *T { return &v }
