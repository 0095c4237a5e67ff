package workloadidentity

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"

	"github.com/go-logr/logr"
)

// clientAuth decides who may call the webhook (--client-ca-file,
// --client-common-name): a client certificate that chains to the CA
// bundle, for client auth, with a CommonName among names (any, when names
// is empty). The patches it answers with hold the annotations of any
// ServiceAccount, read with the webhook's own credentials, so only the
// hosted API server may ask.
//
// Refusal is in two places:
//
//   - at the TLS handshake (verifyConnection), for a certificate that does
//     not qualify: nothing of the request is read;
//   - in HTTP (require), for a connection without a certificate, on every
//     path but the probes'. The readiness probe (runtime.Probe) presents
//     no client certificate, so the handshake cannot demand one: /healthz
//     and /readyz answer anyone, as they say nothing but "ok".
//
// ClientAuth is RequestClientCert and the chain is verified by
// verifyConnection rather than by crypto/tls against a fixed ClientCAs: a
// fixed pool could not follow the bundle file, and a per-handshake
// GetConfigForClient would have to copy the ALPN protocols http.Server
// sets on its own copy of the configuration. verifyConnection runs on
// resumed handshakes too, so a resumed session is verified against the
// bundle of the moment as a new one is.
type clientAuth struct {
	ca    *reloading[*x509.CertPool]
	names []string
	log   logr.Logger
}

// newClientAuth reads the bundle in caFile once, so that one that does not
// load stops Run rather than every handshake.
func newClientAuth(caFile string, names []string, log logr.Logger) (*clientAuth, error) {
	ca := &reloading[*x509.CertPool]{
		files: []string{caFile},
		what:  "client CA bundle " + caFile,
		load:  func() (*x509.CertPool, error) { return readCABundle(caFile) },
		log:   log,
	}
	if _, err := ca.get(); err != nil {
		return nil, err
	}
	return &clientAuth{ca: ca, names: names, log: log}, nil
}

// configure makes tc ask for a client certificate and refuse, at the
// handshake, one that verify refuses.
func (a *clientAuth) configure(tc *tls.Config) {
	tc.ClientAuth = tls.RequestClientCert
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return nil // the probes' connections: require refuses the rest
		}
		return a.verify(cs.PeerCertificates)
	}
}

// verify is nil when the peer's chain (leaf first, as sent) verifies
// against the bundle as it is now, for client auth, and the leaf's
// CommonName is allowed.
func (a *clientAuth) verify(chain []*x509.Certificate) error {
	roots, err := a.ca.get()
	if err != nil {
		return err
	}
	intermediates := x509.NewCertPool()
	for _, c := range chain[1:] {
		intermediates.AddCert(c)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return fmt.Errorf("client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if len(a.names) > 0 && !slices.Contains(a.names, leaf.Subject.CommonName) {
		return fmt.Errorf("client certificate %q: not an allowed common name (--client-common-name)", leaf.Subject.CommonName)
	}
	return nil
}

// require serves next to connections with a certificate verify accepts,
// and the open paths (the probes') to any; others get 403. The
// certificate is verified again although the handshake did: a connection
// kept alive from before the bundle changed is judged by the new one.
func (a *clientAuth) require(next http.Handler, open ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(open, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		err := errors.New("no client certificate")
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			err = a.verify(r.TLS.PeerCertificates)
		}
		if err != nil {
			a.log.Info("request refused", "remote", r.RemoteAddr, "path", r.URL.Path, "reason", err.Error())
			http.Error(w, "forbidden: a client certificate of the webhook's client CA, with an allowed common name, is required", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readCABundle is the pool of the PEM certificates in path. Anything left
// after the last block refuses the file: a bundle written half-way ends in
// a block cut short, which does not decode, and must not be taken for a
// bundle of the certificates before it.
func readCABundle(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			if len(bytes.TrimSpace(rest)) > 0 {
				return nil, fmt.Errorf("not PEM after certificate %d (written half-way?)", n)
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("no certificate")
	}
	return pool, nil
}
