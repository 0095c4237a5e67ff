package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// ServedChain is the certificate chain the TLS server at addr presents,
// leaf first. It is read, not trusted: a caller relies on it only after
// VerifyServer, or reads from it what needs no trust (an expiry, an issuer's
// name).
func ServedChain(ctx context.Context, addr string) ([]*x509.Certificate, error) {
	d := tls.Dialer{Config: &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // reads the chain only; VerifyServer checks it
	}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	tlsConn, ok := conn.(*tls.Conn)
	if !ok {
		return nil, errors.New("not a TLS connection")
	}
	chain := tlsConn.ConnectionState().PeerCertificates
	if len(chain) == 0 {
		return nil, fmt.Errorf("%s presented no certificate", addr)
	}
	return chain, nil
}

// VerifyServer verifies chain's leaf as a TLS server certificate against
// roots, with the rest of chain as its intermediates. A non-empty dnsName
// must be one of the leaf's names.
func VerifyServer(chain []*x509.Certificate, roots *x509.CertPool, dnsName string) error {
	if len(chain) == 0 {
		return errors.New("no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, DNSName: dnsName,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}
