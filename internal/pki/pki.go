// Package pki issues the certificates and keys of a control plane: CAs,
// serving and client certificates, and the service-account signing key.
// Keys are ECDSA P-256: as strong as RSA-3072 for TLS and about a hundred
// times cheaper to generate, which matters when a cluster's PKI is made on
// the create path.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Default validity periods.
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	CertValidity = 365 * 24 * time.Hour
)

// maxBackdate is how far before its issuance a certificate is valid, for
// clocks that lag: an hour, or a tenth of a short validity so that a
// minutes-long certificate is not mostly in the past.
const maxBackdate = time.Hour

// KeyPair is a PEM-encoded certificate and its private key.
type KeyPair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// CertRequest describes a certificate to issue.
type CertRequest struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
	// Validity is how long the certificate is valid; zero: CertValidity.
	Validity time.Duration
}

// NewCA creates a self-signed certificate authority valid for CAValidity.
func NewCA(commonName string) (KeyPair, error) {
	return NewCAFor(commonName, CAValidity)
}

// NewCAFor creates a self-signed certificate authority valid for validity.
func NewCAFor(commonName string, validity time.Duration) (KeyPair, error) {
	return sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, validity, nil, nil, "CA "+commonName)
}

// Issue signs a certificate for req with the CA ca.
func Issue(ca KeyPair, req CertRequest) (KeyPair, error) {
	caCert, caKey, err := ca.Parse()
	if err != nil {
		return KeyPair{}, fmt.Errorf("parse CA: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:        pkix.Name{CommonName: req.CommonName, Organization: req.Organization},
		KeyUsage:       x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPs,
		AuthorityKeyId: caCert.SubjectKeyId,
	}
	if req.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	validity := req.Validity
	if validity <= 0 {
		validity = CertValidity
	}
	return sign(tmpl, validity, caCert, caKey, "certificate "+req.CommonName)
}

// sign makes a new key and a certificate for it from tmpl, valid from a
// little before now (for clock skew, see backdate) until validity from now,
// signed by parent — or by itself when parent is nil, a CA identified by
// its own key.
func sign(tmpl *x509.Certificate, validity time.Duration, parent *x509.Certificate, parentKey crypto.Signer, what string) (KeyPair, error) {
	key, err := newKey()
	if err != nil {
		return KeyPair{}, err
	}
	now := time.Now()
	tmpl.SerialNumber = newSerial()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-backdate(validity)), now.Add(validity)
	if parent == nil {
		tmpl.SubjectKeyId = keyID(&key.PublicKey)
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return KeyPair{}, fmt.Errorf("sign %s: %w", what, err)
	}
	return encode(der, key)
}

func backdate(validity time.Duration) time.Duration {
	return min(maxBackdate, validity/10)
}

// NewServiceAccountKey returns a PEM private key and its PEM public key, for
// signing and verifying service-account tokens.
func NewServiceAccountKey() (keyPEM, pubPEM []byte, err error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encode service-account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("encode service-account public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), nil
}

// Parse decodes the key pair.
func (kp KeyPair) Parse() (*x509.Certificate, crypto.Signer, error) {
	cert, err := ParseCertificate(kp.CertPEM)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(kp.KeyPEM)
	if block == nil {
		return nil, nil, errors.New("no PEM block in private key")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse private key: %w", err)
	}
	return cert, key, nil
}

// ParseCertificate decodes the first certificate of a PEM bundle.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return cert, nil
}

// ParseCertificates decodes every certificate of a PEM bundle, in order;
// blocks of another type and certificates that do not parse are skipped.
func ParseCertificates(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// CACertHash is the kubeadm-style discovery hash (--ca-cert-hash) of the
// first certificate of caPEM; see PublicKeyHash.
func CACertHash(caPEM []byte) (string, error) {
	cert, err := ParseCertificate(caPEM)
	if err != nil {
		return "", err
	}
	return PublicKeyHash(cert), nil
}

// PublicKeyHash is the kubeadm-style discovery hash of a certificate:
// "sha256:" and the hex SHA-256 of its SubjectPublicKeyInfo. A join trusts
// the one certificate with this hash, never the rest of a bundle.
func PublicKeyHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return key, nil
}

func newSerial() *big.Int {
	limit := new(big.Int).Lsh(big.NewInt(1), 127)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		// crypto/rand does not fail on Linux; a zero serial would still be valid.
		return big.NewInt(1)
	}
	return n.Add(n, big.NewInt(1))
}

func keyID(pub *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

func encode(der []byte, key *ecdsa.PrivateKey) (KeyPair, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("encode key: %w", err)
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}
