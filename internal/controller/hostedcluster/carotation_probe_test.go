package hostedcluster

import (
	"crypto/x509"
	"testing"

	"hypershift.dev/internal/pki"
)

// The rotation reads the endpoint's chain without Go's verification and
// judges it with verifiesWith: a chain of another CA, a client-only leaf,
// an empty chain or roots that are not PEM never pass.
func TestVerifiesWithRefusesWhatTheRootsDoNotSign(t *testing.T) {
	ours, err := pki.NewCA("ours")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := pki.NewCA("foreign")
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(ca pki.KeyPair, server bool) []*x509.Certificate {
		t.Helper()
		kp, err := pki.Issue(ca, pki.CertRequest{CommonName: "kube-apiserver", Server: server, Client: !server})
		if err != nil {
			t.Fatal(err)
		}
		c, err := pki.ParseCertificate(kp.CertPEM)
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{c}
	}
	for name, tc := range map[string]struct {
		chain []*x509.Certificate
		roots []byte
		want  bool
	}{
		"served by our CA":     {leaf(ours, true), ours.CertPEM, true},
		"served by another CA": {leaf(foreign, true), ours.CertPEM, false},
		"a client certificate": {leaf(ours, false), ours.CertPEM, false},
		"no chain":             {nil, ours.CertPEM, false},
		"roots not PEM":        {leaf(ours, true), []byte("not a certificate"), false},
	} {
		if got := verifiesWith(tc.chain, tc.roots); got != tc.want {
			t.Errorf("%s: verifiesWith = %t, want %t", name, got, tc.want)
		}
	}
}
