package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func pemOf(t *testing.T, typ string, der []byte, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func TestParseServiceAccountKey(t *testing.T) {
	rsa2048, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsa1024, _ := rsa.GenerateKey(rand.Reader, 1024)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		return pemOf(t, "PRIVATE KEY", der, err)
	}
	sec1 := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		return pemOf(t, "EC PRIVATE KEY", der, err)
	}
	tests := []struct {
		name    string
		key     []byte
		wantErr string
	}{
		{name: "RSA 2048, PKCS #1", key: pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsa2048), nil)},
		{name: "RSA 2048, PKCS #8", key: pkcs8(rsa2048)},
		{name: "ECDSA P-256, SEC 1", key: sec1(p256)},
		{name: "ECDSA P-384, PKCS #8", key: pkcs8(p384)},
		{name: "RSA 1024", key: pkcs8(rsa1024), wantErr: "the RSA key has 1024 bits: want at least 2048"},
		{name: "ECDSA P-521", key: sec1(p521), wantErr: "curve P-521: want P-256 or P-384"},
		{name: "Ed25519", key: pkcs8(ed), wantErr: "cannot sign service-account tokens"},
		{name: "a certificate", key: pemOf(t, "CERTIFICATE", []byte{1}, nil), wantErr: `PEM block "CERTIFICATE" is not a private key`},
		{name: "not PEM", key: []byte("key"), wantErr: "no PEM block"},
		{name: "two keys", key: append(sec1(p256), sec1(p384)...), wantErr: "more than one PEM block"},
		{name: "too large", key: bytes.Repeat([]byte("A"), maxSigningKeyPEM+1), wantErr: "more than a signing key's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kp, err := ParseServiceAccountKey(tt.key)
			if tt.wantErr != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.wantErr)) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(kp.KeyPEM, tt.key) {
				t.Error("the private key is not kept as given")
			}
			pub, err := ServiceAccountPublicKey(kp.CertPEM)
			if err != nil {
				t.Fatal(err)
			}
			if k, ok := pub.(interface{ Equal(x crypto.PublicKey) bool }); !ok || !k.Equal(publicOf(t, tt.key)) {
				t.Error("the public key is not the private key's")
			}
		})
	}
}

func publicOf(t *testing.T, keyPEM []byte) any {
	t.Helper()
	block, _ := pem.Decode(keyPEM)
	var k any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k.(interface{ Public() crypto.PublicKey }).Public()
}

// A PKI made with a key brought keeps it; a stored key is never replaced
// by the option.
func TestEnsureControlPlaneTakesTheSigningKeyGiven(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.MarshalECPrivateKey(p256)
	given, err := ParseServiceAccountKey(pemOf(t, "EC PRIVATE KEY", der, err))
	if err != nil {
		t.Fatal(err)
	}
	store := FileStore{Dir: t.TempDir()}
	cp, err := EnsureControlPlane(store, ControlPlaneOptions{ServiceAccountKey: &given})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cp.ServiceAccountKey.KeyPEM, given.KeyPEM) || !bytes.Equal(cp.ServiceAccountKey.CertPEM, given.CertPEM) {
		t.Fatal("a new PKI does not sign with the key given")
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err = x509.MarshalECPrivateKey(other)
	second, err := ParseServiceAccountKey(pemOf(t, "EC PRIVATE KEY", der, err))
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureControlPlane(store, ControlPlaneOptions{ServiceAccountKey: &second})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.ServiceAccountKey.KeyPEM, given.KeyPEM) {
		t.Fatal("a stored signing key was replaced")
	}
}
