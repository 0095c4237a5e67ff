package oidcissuer

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/testenv"
)

// TestMatchesKubeAPIServer: for the key a real kube-apiserver verifies
// service-account tokens with, KeyID, JWKS and Discovery give what the
// apiserver serves at /openid/v1/jwks and
// /.well-known/openid-configuration (its jwks_uri names its own address,
// not the issuer), and a token it signs carries KeyID in its kid header
// and verifies with the key rebuilt from our key set.
func TestMatchesKubeAPIServer(t *testing.T) {
	env := testenv.Start(t)
	pub := serviceAccountKey(t, env.DataDir)
	httpClient, err := rest.HTTPClientFor(env.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) []byte {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(env.RESTConfig.Host, "/")+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s (%v)", path, resp.Status, body, err)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/") || !strings.Contains(ct, "json") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		return body
	}

	servedJWKS := get(JWKSPath)
	ourJWKS, err := JWKS([]crypto.PublicKey{pub})
	if err != nil {
		t.Fatal(err)
	}
	served, ours := jsonKeys(t, servedJWKS), jsonKeys(t, ourJWKS)
	if len(served) != 1 || len(ours) != 1 {
		t.Fatalf("served key set %s, ours %s: want one key each", servedJWKS, ourJWKS)
	}
	compareFields(t, "JWKS key", served[0], ours[0], nil)
	kid, err := KeyID(pub)
	if err != nil {
		t.Fatal(err)
	}
	if served[0]["kid"] != kid {
		t.Errorf("served kid %v, KeyID %s", served[0]["kid"], kid)
	}
	// Our types follow go-jose's field order so the bytes match too.
	if !bytes.Equal(servedJWKS, ourJWKS) {
		t.Errorf("key set bytes differ:\nserved %s\nours   %s", servedJWKS, ourJWKS)
	}

	servedDiscovery := get(DiscoveryPath)
	var servedDoc map[string]any
	if err := json.Unmarshal(servedDiscovery, &servedDoc); err != nil {
		t.Fatalf("served discovery document %s: %v", servedDiscovery, err)
	}
	issuer, _ := servedDoc["issuer"].(string)
	ourDiscovery, err := Discovery(issuer, []crypto.PublicKey{pub})
	if err != nil {
		t.Fatal(err)
	}
	var ourDoc map[string]any
	if err := json.Unmarshal(ourDiscovery, &ourDoc); err != nil {
		t.Fatal(err)
	}
	compareFields(t, "discovery document", servedDoc, ourDoc, []string{"jwks_uri"})
	if uri, _ := servedDoc["jwks_uri"].(string); !strings.HasPrefix(uri, "https://") || !strings.HasSuffix(uri, JWKSPath) {
		t.Errorf("served jwks_uri %q, want https://ADDRESS%s", uri, JWKSPath)
	}

	// A token the apiserver signs.
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "oidc-relying-party"}}
	if _, err := kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault).CreateToken(t.Context(), sa.Name,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{"sts.amazonaws.com"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	verifyToken(t, tr.Status.Token, ourJWKS, issuer)
}

// serviceAccountKey is the public key the plane's kube-apiserver
// verifies tokens with: its --service-account-key-file,
// service-account.pub in its directory under dataDir.
func serviceAccountKey(t *testing.T, dataDir string) crypto.PublicKey {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() == "service-account.pub" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no service-account.pub under %s (%v): where does internal/components write the kube-apiserver's --service-account-key-file?", dataDir, err)
	}
	var pub crypto.PublicKey
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(data)
		if block == nil {
			t.Fatalf("%s: no PEM block", f)
		}
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if pub != nil && !reflect.DeepEqual(pub, k) {
			t.Fatalf("the apiservers under %s verify with different keys (%v)", dataDir, files)
		}
		pub = k
	}
	return pub
}

// jsonKeys are the keys of a JWKS, every field as parsed.
func jsonKeys(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var set struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatalf("key set %s: %v", data, err)
	}
	return set.Keys
}

// compareFields reports every field of served and ours, but those
// skipped, that differs or is in one only.
func compareFields(t *testing.T, what string, served, ours map[string]any, skip []string) {
	t.Helper()
	var names []string
	for k := range served {
		names = append(names, k)
	}
	for k := range ours {
		if _, ok := served[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if slices.Contains(skip, k) {
			continue
		}
		s, inServed := served[k]
		o, inOurs := ours[k]
		switch {
		case !inOurs:
			t.Errorf("%s: the apiserver serves %s=%v, we do not", what, k, s)
		case !inServed:
			t.Errorf("%s: we write %s=%v, the apiserver does not", what, k, o)
		case !reflect.DeepEqual(s, o):
			t.Errorf("%s: %s is %v served, %v ours", what, k, s, o)
		}
	}
}

// verifyToken checks token as a relying party does with the key set
// jwks: the key its kid names verifies its signature with the alg of
// that key, and it was issued by issuer.
func verifyToken(t *testing.T, token string, jwks []byte, issuer string) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token of %d parts", len(parts))
	}
	var header struct{ Alg, Kid string }
	var claims struct{ Iss string }
	for i, v := range []any{&header, &claims} {
		data, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	var set keySet
	if err := json.Unmarshal(jwks, &set); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(set.Keys, func(k jwk) bool { return k.Kid == header.Kid })
	if i < 0 {
		t.Fatalf("the token's kid %q is none of our key set's %s", header.Kid, jwks)
	}
	k := set.Keys[i]
	if header.Alg != k.Alg {
		t.Errorf("the token is signed with %s, our key set says %s", header.Alg, k.Alg)
	}
	if claims.Iss != issuer {
		t.Errorf("the token's iss %q, the discovery document's issuer %q", claims.Iss, issuer)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	signed := []byte(parts[0] + "." + parts[1])
	var ok bool
	switch pub := publicKeyOf(t, k).(type) {
	case *ecdsa.PublicKey:
		var digest []byte
		switch k.Alg {
		case "ES256":
			sum := sha256.Sum256(signed)
			digest = sum[:]
		case "ES384":
			sum := sha512.Sum384(signed)
			digest = sum[:]
		}
		// A JWS ECDSA signature is r and s, each of the curve's width.
		half := len(sig) / 2
		ok = ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:half]), new(big.Int).SetBytes(sig[half:]))
	case *rsa.PublicKey:
		sum := sha256.Sum256(signed)
		ok = rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
	}
	if !ok {
		t.Errorf("the token's signature does not verify with key %s of our key set", k.Kid)
	}
}
