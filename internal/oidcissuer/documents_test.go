package oidcissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"

	"hypershift.dev/internal/testenv"
)

// publicKeyOf rebuilds the public key of a served JWK the way a relying
// party does, strictly: unpadded base64url, EC coordinates of the
// curve's full width.
func publicKeyOf(t *testing.T, k jwk) crypto.PublicKey {
	t.Helper()
	decode := func(field, s string) []byte {
		t.Helper()
		b, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil {
			t.Fatalf("key %s: %s %q is not unpadded base64url: %v", k.Kid, field, s, err)
		}
		return b
	}
	switch k.Kty {
	case "RSA":
		return &rsa.PublicKey{N: new(big.Int).SetBytes(decode("n", k.N)), E: int(new(big.Int).SetBytes(decode("e", k.E)).Int64())}
	case "EC":
		curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384()}[k.Crv]
		if curve == nil {
			t.Fatalf("key %s: crv %q", k.Kid, k.Crv)
		}
		x, y := decode("x", k.X), decode("y", k.Y)
		if size := (curve.Params().BitSize + 7) / 8; len(x) != size || len(y) != size {
			t.Fatalf("key %s: x is %d bytes, y %d: want %d each (RFC 7518 6.2.1.2)", k.Kid, len(x), len(y), size)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, slices.Concat([]byte{4}, x, y))
		if err != nil {
			t.Fatalf("key %s: %v", k.Kid, err)
		}
		return pub
	}
	t.Fatalf("key %s: kty %q", k.Kid, k.Kty)
	return nil
}

func newRSA(t *testing.T, bits int) *rsa.PublicKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, bits)
	if err != nil {
		t.Fatal(err)
	}
	return &k.PublicKey
}

func newEC(t *testing.T, curve elliptic.Curve) *ecdsa.PublicKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &k.PublicKey
}

// shortX is a P-256 key whose x coordinate has a leading zero byte
// (one key in 256): its JWK must still carry 32 bytes of x.
func shortX(t *testing.T) *ecdsa.PublicKey {
	t.Helper()
	for range 1 << 16 {
		k := newEC(t, elliptic.P256())
		if point, err := k.Bytes(); err == nil && point[1] == 0 {
			return k
		}
	}
	t.Fatal("no P-256 key with a short x in 65536 tries")
	return nil
}

// TestDocumentsOfEachKeyType: RSA 2048, P-256 and P-384 keys, alone and
// together, give a key set a relying party rebuilds the same keys from,
// each under its KeyID, and a discovery document naming their
// algorithms.
func TestDocumentsOfEachKeyType(t *testing.T) {
	rsa2048, p256, p384, short := newRSA(t, 2048), newEC(t, elliptic.P256()), newEC(t, elliptic.P384()), shortX(t)
	const issuer = "https://oidc.example.com/clusters/a"
	for _, c := range []struct {
		name     string
		pubs     []crypto.PublicKey
		wantAlgs []string // of the key set, in order
	}{
		{"RSA 2048", []crypto.PublicKey{rsa2048}, []string{"RS256"}},
		{"P-256", []crypto.PublicKey{p256}, []string{"ES256"}},
		{"P-384", []crypto.PublicKey{p384}, []string{"ES384"}},
		{"P-256 with a short x", []crypto.PublicKey{short}, []string{"ES256"}},
		{"rotation: all, one twice", []crypto.PublicKey{p384, rsa2048, p256, rsa2048, short}, []string{"ES384", "RS256", "ES256", "ES256"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, err := JWKS(c.pubs)
			if err != nil {
				t.Fatal(err)
			}
			var set keySet
			if err := json.Unmarshal(data, &set); err != nil {
				t.Fatalf("key set %s does not parse: %v", data, err)
			}
			var algs []string
			var want []crypto.PublicKey
			for _, pub := range c.pubs {
				if !slices.ContainsFunc(want, func(p crypto.PublicKey) bool { return p.(interface{ Equal(crypto.PublicKey) bool }).Equal(pub) }) {
					want = append(want, pub)
				}
			}
			if len(set.Keys) != len(want) {
				t.Fatalf("%d keys in %s, want %d", len(set.Keys), data, len(want))
			}
			for i, k := range set.Keys {
				algs = append(algs, k.Alg)
				if k.Use != "sig" {
					t.Errorf("key %d: use %q, want sig", i, k.Use)
				}
				if got := publicKeyOf(t, k); !want[i].(interface{ Equal(crypto.PublicKey) bool }).Equal(got) {
					t.Errorf("key %d of %s is not the key given", i, data)
				}
				if kid, err := KeyID(want[i]); err != nil || k.Kid != kid {
					t.Errorf("key %d: kid %q, want KeyID %q (%v)", i, k.Kid, kid, err)
				}
			}
			if !slices.Equal(algs, c.wantAlgs) {
				t.Errorf("algorithms %v, want %v", algs, c.wantAlgs)
			}

			data, err = Discovery(issuer, c.pubs)
			if err != nil {
				t.Fatal(err)
			}
			var doc discoveryDoc
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatalf("discovery document %s does not parse: %v", data, err)
			}
			wantAlgs := slices.Compact(slices.Sorted(slices.Values(c.wantAlgs)))
			if doc.Issuer != issuer || doc.JWKSURI != issuer+"/openid/v1/jwks" ||
				!slices.Equal(doc.ResponseTypes, []string{"id_token"}) || !slices.Equal(doc.SubjectTypes, []string{"public"}) ||
				!slices.Equal(doc.SigningAlgs, wantAlgs) {
				t.Errorf("discovery document %s, want issuer %s, its jwks_uri and algorithms %v", data, issuer, wantAlgs)
			}
		})
	}
}

// TestRefusedKeys: keys relying parties or the apiserver cannot use, and
// private keys, are refused with an error naming the key and the fix.
func TestRefusedKeys(t *testing.T) {
	edPub, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	p256 := newEC(t, elliptic.P256())
	// No constructor makes a point off its curve.
	offCurve := &ecdsa.PublicKey{Curve: elliptic.P256(), X: big.NewInt(1), Y: big.NewInt(1)} //nolint:staticcheck // see above
	for _, c := range []struct {
		name string
		pubs []crypto.PublicKey
		want string
	}{
		{"none", nil, "no public keys"},
		{"Ed25519", []crypto.PublicKey{edPub}, "public key #0 is of type ed25519.PublicKey, which is not accepted: want *rsa.PublicKey of at least 2048 bits, or *ecdsa.PublicKey on P-256 or P-384"},
		{"RSA 1024", []crypto.PublicKey{p256, newRSA(t, 1024)}, "public key #1 is a 1024-bit RSA key: use at least 2048 bits"},
		{"P-521", []crypto.PublicKey{newEC(t, elliptic.P521())}, "an ECDSA key on curve P-521: use P-256 or P-384"},
		{"P-224", []crypto.PublicKey{newEC(t, elliptic.P224())}, "an ECDSA key on curve P-224: use P-256 or P-384"},
		{"point not on the curve", []crypto.PublicKey{offCurve}, "an invalid P-256 key"},
		{"RSA private key", []crypto.PublicKey{rsaKey}, "a private key (*rsa.PrivateKey): pass its public key"},
		{"Ed25519 private key", []crypto.PublicKey{edKey}, "a private key (ed25519.PrivateKey)"},
		{"not a pointer", []crypto.PublicKey{*p256}, "of type ecdsa.PublicKey"},
		{"zero ECDSA key", []crypto.PublicKey{&ecdsa.PublicKey{Curve: elliptic.P256()}}, "an ECDSA public key without its curve or point"},
		{"nil RSA key", []crypto.PublicKey{(*rsa.PublicKey)(nil)}, "an RSA public key without its modulus or exponent"},
		{"nil", []crypto.PublicKey{nil}, "of type <nil>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := JWKS(c.pubs)
			testenv.ExpectError(t, err, c.want)
			_, err = Discovery("https://oidc.example.com", c.pubs)
			testenv.ExpectError(t, err, c.want)
		})
	}
}

func TestValidateIssuerURL(t *testing.T) {
	for _, c := range []struct {
		issuer, want string // want: part of the error; "" for valid
	}{
		{"https://oidc.example.com", ""},
		{"https://oidc.example.com:8443/clusters/a", ""},
		{"https://kubernetes.default.svc", ""},
		{"http://oidc.example.com", "want https://HOST[/PATH]"},
		{"oidc.example.com/a", "want https://HOST[/PATH]"},
		{"", "want https://HOST[/PATH]"},
		{"https:///a", "has no host"},
		{"https://user:secret@oidc.example.com", `carries user info: remove "user@"`},
		{"https://oidc.example.com?a=b", `has a query: remove "?a=b"`},
		{"https://oidc.example.com?", `has a query: remove "?"`},
		{"https://oidc.example.com#a", `has a fragment: remove "#a"`},
		{"https://oidc.example.com/a#", `has a fragment: remove "#"`},
		{"https://oidc.example.com/", `ends with a slash: use "https://oidc.example.com"`},
		{"https://oidc.example.com/a/", `ends with a slash: use "https://oidc.example.com/a"`},
		{"https://oidc.example.com/a b%zz", "is not a URL"},
	} {
		t.Run(c.issuer, func(t *testing.T) {
			err := ValidateIssuerURL(c.issuer)
			testenv.ExpectError(t, err, c.want)
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error repeats the password: %v", err)
			}
		})
	}
}

// The keys and documents of kube-apiserver's own tests
// (k8s.io/kubernetes@v1.37.1 pkg/serviceaccount: rsaPublicKey and
// ecdsaPublicKey of jwt_test.go, TestNewOpenIDMetadata's "valid inputs"),
// so KeyID, JWKS and Discovery stay pinned to the apiserver's where no
// apiserver runs (-short).
const (
	k8sRSAPublicKey = `-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA249XwEo9k4tM8fMxV7zx
OhcrP+WvXn917koM5Qr2ZXs4vo26e4ytdlrV0bQ9SlcLpQVSYjIxNfhTZdDt+ecI
zshKuv1gKIxbbLQMOuK1eA/4HALyEkFgmS/tleLJrhc65tKPMGD+pKQ/xhmzRuCG
51RoiMgbQxaCyYxGfNLpLAZK9L0Tctv9a0mJmGIYnIOQM4kC1A1I1n3EsXMWmeJU
j7OTh/AjjCnMnkgvKT2tpKxYQ59PgDgU8Ssc7RDSmSkLxnrv+OrN80j6xrw0OjEi
B4Ycr0PqfzZcvy8efTtFQ/Jnc4Bp1zUtFXt7+QeevePtQ2EcyELXE0i63T1CujRM
WwIDAQAB
-----END PUBLIC KEY-----`
	k8sECDSAPublicKey = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEH6cuzP8XuD5wal6wf9M6xDljTOPL
X2i8uIp/C/ASqiIGUeeKQtX0/IR3qCXyThP/dbCiHrF3v1cuhBOHY8CLVg==
-----END PUBLIC KEY-----`
	k8sKeySet    = `{"keys":[{"use":"sig","kty":"RSA","kid":"JHJehTTTZlsspKHT-GaJxK7Kd1NQgZJu3fyK6K_QDYU","alg":"RS256","n":"249XwEo9k4tM8fMxV7zxOhcrP-WvXn917koM5Qr2ZXs4vo26e4ytdlrV0bQ9SlcLpQVSYjIxNfhTZdDt-ecIzshKuv1gKIxbbLQMOuK1eA_4HALyEkFgmS_tleLJrhc65tKPMGD-pKQ_xhmzRuCG51RoiMgbQxaCyYxGfNLpLAZK9L0Tctv9a0mJmGIYnIOQM4kC1A1I1n3EsXMWmeJUj7OTh_AjjCnMnkgvKT2tpKxYQ59PgDgU8Ssc7RDSmSkLxnrv-OrN80j6xrw0OjEiB4Ycr0PqfzZcvy8efTtFQ_Jnc4Bp1zUtFXt7-QeevePtQ2EcyELXE0i63T1CujRMWw","e":"AQAB"},{"use":"sig","kty":"EC","kid":"SoABiieYuNx4UdqYvZRVeuC6SihxgLrhLy9peHMHpTc","crv":"P-256","alg":"ES256","x":"H6cuzP8XuD5wal6wf9M6xDljTOPLX2i8uIp_C_ASqiI","y":"BlHnikLV9PyEd6gl8k4T_3Wwoh6xd79XLoQTh2PAi1Y"}]}`
	k8sDiscovery = `{"issuer":"https://issuer.example.com","jwks_uri":"https://issuer.example.com/openid/v1/jwks","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256","RS256"]}`
)

func TestKubernetesVectors(t *testing.T) {
	var pubs []crypto.PublicKey
	for _, p := range []string{k8sRSAPublicKey, k8sECDSAPublicKey} {
		block, _ := pem.Decode([]byte(p))
		pub, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		pubs = append(pubs, pub)
	}
	for i, want := range []string{"JHJehTTTZlsspKHT-GaJxK7Kd1NQgZJu3fyK6K_QDYU", "SoABiieYuNx4UdqYvZRVeuC6SihxgLrhLy9peHMHpTc"} {
		if kid, err := KeyID(pubs[i]); err != nil || kid != want {
			t.Errorf("KeyID of key %d: %q (%v), kube-apiserver's %q", i, kid, err, want)
		}
	}
	if got, err := JWKS(pubs); err != nil || string(got) != k8sKeySet {
		t.Errorf("JWKS: %s (%v)\nkube-apiserver's %s", got, err, k8sKeySet)
	}
	if got, err := Discovery("https://issuer.example.com", pubs); err != nil || string(got) != k8sDiscovery {
		t.Errorf("Discovery: %s (%v)\nkube-apiserver's %s", got, err, k8sDiscovery)
	}
}
