package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// maxSigningKeyPEM bounds a signing key a user brings: an RSA key of 8192
// bits is under 7 KiB of PEM.
const maxSigningKeyPEM = 16 << 10

// ParseServiceAccountKey checks a service-account signing key a user
// brings (spec.serviceAccountSigningKey) and returns it as the PKI stores
// it: the PEM private key as given, and its PEM public key in CertPEM.
// Taken: one PEM block of an RSA key of at least 2048 bits, or an ECDSA
// P-256 or P-384 key, in PKCS #1, SEC 1 or PKCS #8 form — what the API
// server signs with (RS256, ES256, ES384).
func ParseServiceAccountKey(keyPEM []byte) (KeyPair, error) {
	if len(keyPEM) > maxSigningKeyPEM {
		return KeyPair{}, fmt.Errorf("the key is %d bytes, more than a signing key's %d", len(keyPEM), maxSigningKeyPEM)
	}
	block, rest := pem.Decode(keyPEM)
	if block == nil {
		return KeyPair{}, errors.New("no PEM block: want a PEM private key (RSA of at least 2048 bits, or ECDSA P-256 or P-384)")
	}
	if next, _ := pem.Decode(rest); next != nil {
		return KeyPair{}, errors.New("more than one PEM block: want the private key alone")
	}
	var key any
	var err error
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return KeyPair{}, fmt.Errorf("PEM block %q is not a private key: want RSA PRIVATE KEY, EC PRIVATE KEY or PRIVATE KEY", block.Type)
	}
	if err != nil {
		return KeyPair{}, fmt.Errorf("parse %s: %w", block.Type, err)
	}
	var pub crypto.PublicKey
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return KeyPair{}, fmt.Errorf("the RSA key has %d bits: want at least 2048", k.N.BitLen())
		}
		pub = &k.PublicKey
	case *ecdsa.PrivateKey:
		if c := k.Curve; c != elliptic.P256() && c != elliptic.P384() {
			return KeyPair{}, fmt.Errorf("the ECDSA key is on curve %s: want P-256 or P-384", c.Params().Name)
		}
		pub = &k.PublicKey
	default:
		return KeyPair{}, fmt.Errorf("a %T cannot sign service-account tokens: want RSA (at least 2048 bits) or ECDSA P-256 or P-384", key)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return KeyPair{}, fmt.Errorf("encode the public key: %w", err)
	}
	return KeyPair{KeyPEM: keyPEM, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})}, nil
}

// ServiceAccountPublicKey parses the PEM public key of a service-account
// key pair (KeyPair.CertPEM).
func ServiceAccountPublicKey(pubPEM []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(pubPEM)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("no PEM PUBLIC KEY block")
	}
	return x509.ParsePKIXPublicKey(block.Bytes)
}
