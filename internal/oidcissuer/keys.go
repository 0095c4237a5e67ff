package oidcissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
)

// minRSABits is the smallest RSA key published: relying parties (AWS IAM
// among them) refuse smaller ones, so a 1024-bit key would publish a key
// set nobody can use.
const minRSABits = 2048

// KeyID is the key id kube-apiserver gives pub in its JWKS and in the kid
// header of the tokens it signs (keyIDFromPublicKey in
// k8s.io/kubernetes/pkg/serviceaccount/jwt.go): the unpadded base64url
// SHA-256 of the key's PKIX DER. A relying party picks the verifying key
// by this id, so it must be the apiserver's bit for bit.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("key id of a %T: %w", pub, err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// jwk is one key of a JWKS, its fields in the order go-jose (which
// kube-apiserver marshals with) writes them, so a key set made here is
// byte for byte the apiserver's.
type jwk struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// keySet is a JWKS document.
type keySet struct {
	Keys []jwk `json:"keys"`
}

// ecCurves are the curves accepted, with their JWK names and the
// algorithms kube-apiserver signs with on them. P-521 (which the
// apiserver could sign with) is left out: a hosted cluster's key is
// hypershift's P-256 or a user's RSA, P-256 or P-384 key.
var ecCurves = []struct {
	curve elliptic.Curve
	crv   string
	alg   string
}{
	{elliptic.P256(), "P-256", "ES256"},
	{elliptic.P384(), "P-384", "ES384"},
}

// supportedKeys says which keys are accepted, for errors.
const supportedKeys = "*rsa.PublicKey of at least 2048 bits, or *ecdsa.PublicKey on P-256 or P-384"

// toJWK is pub as kube-apiserver publishes it (jwkFromPublicKey in
// k8s.io/kubernetes/pkg/serviceaccount/openidmetadata.go), or an error
// saying why it is not accepted.
func toJWK(pub crypto.PublicKey) (jwk, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k == nil || k.N == nil || k.E <= 0 {
			return jwk{}, errors.New("an RSA public key without its modulus or exponent")
		}
		if bits := k.N.BitLen(); bits < minRSABits {
			return jwk{}, fmt.Errorf("a %d-bit RSA key: use at least %d bits (relying parties such as AWS IAM refuse smaller keys)", bits, minRSABits)
		}
		kid, err := KeyID(k)
		if err != nil {
			return jwk{}, err
		}
		// e is the exponent's big-endian bytes without leading zeros
		// (AQAB for 65537), as go-jose writes it.
		return jwk{
			Use: "sig", Kty: "RSA", Kid: kid, Alg: "RS256",
			N: b64(k.N.Bytes()), E: b64(big.NewInt(int64(k.E)).Bytes()),
		}, nil
	case *ecdsa.PublicKey:
		// The coordinates are read only to refuse a zero key, on which
		// Bytes and x509 would panic.
		if k == nil || k.Curve == nil || k.X == nil || k.Y == nil { //nolint:staticcheck // see above
			return jwk{}, errors.New("an ECDSA public key without its curve or point")
		}
		for _, c := range ecCurves {
			if k.Curve != c.curve {
				continue
			}
			// Bytes refuses a point off the curve, as go-jose's Valid
			// does for the apiserver, and gives 04 || x || y, each
			// coordinate of the curve's full width with its leading
			// zeros, as RFC 7518 6.2.1.2 wants them.
			point, err := k.Bytes()
			if err != nil {
				return jwk{}, fmt.Errorf("an invalid %s key: %w", c.crv, err)
			}
			kid, err := KeyID(k)
			if err != nil {
				return jwk{}, err
			}
			size := (len(point) - 1) / 2
			return jwk{
				Use: "sig", Kty: "EC", Kid: kid, Crv: c.crv, Alg: c.alg,
				X: b64(point[1 : 1+size]), Y: b64(point[1+size:]),
			}, nil
		}
		return jwk{}, fmt.Errorf("an ECDSA key on curve %s: use P-256 or P-384", k.Curve.Params().Name)
	case interface{ Public() crypto.PublicKey }:
		// Never published, even in part: a private key here is a mistake
		// of the caller's.
		return jwk{}, fmt.Errorf("a private key (%T): pass its public key", pub)
	default:
		return jwk{}, fmt.Errorf("of type %T, which is not accepted: want %s", pub, supportedKeys)
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// keySetOf is the JWKS of pubs in their order (the apiserver's order:
// that of its key files), a key given twice listed once; an error names
// the first key not accepted by its position.
func keySetOf(pubs []crypto.PublicKey) (keySet, error) {
	if len(pubs) == 0 {
		return keySet{}, errors.New("no public keys: an issuer needs at least the key its tokens are signed with")
	}
	set := keySet{Keys: make([]jwk, 0, len(pubs))}
	seen := map[string]bool{}
	for i, pub := range pubs {
		k, err := toJWK(pub)
		if err != nil {
			return keySet{}, fmt.Errorf("public key #%d is %w", i, err)
		}
		if seen[k.Kid] {
			continue
		}
		seen[k.Kid] = true
		set.Keys = append(set.Keys, k)
	}
	return set, nil
}
