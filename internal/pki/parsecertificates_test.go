package pki

import (
	"encoding/pem"
	"slices"
	"testing"
)

func TestParseCertificatesSkipsOtherBlocks(t *testing.T) {
	a, err := NewCA("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCA("b")
	if err != nil {
		t.Fatal(err)
	}
	bundle := slices.Concat(
		a.CertPEM,
		a.KeyPEM, // not a certificate
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}),
		b.CertPEM,
	)
	certs := ParseCertificates(bundle)
	var names []string
	for _, c := range certs {
		names = append(names, c.Subject.CommonName)
	}
	if !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("certificates %v, want [a b]", names)
	}
	if got := ParseCertificates(nil); got != nil {
		t.Fatalf("no bundle: %v, want nil", got)
	}
}
