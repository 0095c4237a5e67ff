package join

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"hypershift.dev/internal/pki"
)

// A serving certificate of the signing kubelet CA, none yet, or no kubelet
// CA published: nothing to renew, and nothing is asked of the API server
// (cfg is nil: a request would fail).
func TestRenewStaleServingCertificateLeavesCurrentAlone(t *testing.T) {
	oldCA, newCA := testCA(t, "kubelet-ca-old"), testCA(t, "kubelet-ca-new")
	n := &Node{Name: "host-1", DataDir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(n.DataDir, "kubelet-pki"), 0o700); err != nil {
		t.Fatal(err)
	}
	published := publishedTrust{kubeletCAs: append(pki.ParseCertificates(newCA.CertPEM), pki.ParseCertificates(oldCA.CertPEM)...)}
	if got, err := n.renewStaleServingCertificate(t.Context(), nil, published); err != nil || got != nil {
		t.Fatalf("without a serving certificate: renewed %d bytes, %v", len(got), err)
	}
	kp, err := pki.Issue(newCA, pki.CertRequest{CommonName: "system:node:host-1", Server: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeCurrentPair(n.kubeletServingCurrent(), "kubelet-server", append(kp.CertPEM, kp.KeyPEM...)); err != nil {
		t.Fatal(err)
	}
	if got, err := n.renewStaleServingCertificate(t.Context(), nil, published); err != nil || got != nil {
		t.Fatalf("a certificate of the signing CA: renewed %d bytes, %v", len(got), err)
	}
	if got, err := n.renewStaleServingCertificate(t.Context(), nil, publishedTrust{}); err != nil || got != nil {
		t.Fatalf("no kubelet CA published: renewed %d bytes, %v", len(got), err)
	}
}

// The published cross-signed CA is appended only to a certificate of the
// CA it certifies, and that chain verifies against the old CA alone (an
// API server not restarted yet) and against the new one.
func TestServingChainFor(t *testing.T) {
	oldCA, newCA := testCA(t, "kubelet-ca-old"), testCA(t, "kubelet-ca-new")
	store := pki.FileStore{Dir: t.TempDir()}
	for name, kp := range map[string]pki.KeyPair{pki.KubeletCAName: newCA, pki.PreviousName(pki.KubeletCAName): oldCA} {
		if err := store.Put(name, kp); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := pki.EnsureControlPlane(store, pki.ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cross, err := cp.CrossSignedCA(pki.KubeletCAName, nil)
	if err != nil || cross == nil {
		t.Fatalf("cross-signed kubelet CA: %v", err)
	}
	leaf, err := pki.Issue(newCA, pki.CertRequest{CommonName: "system:node:host-1", DNSNames: []string{"host-1"}, Server: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	oldLeaf, err := pki.Issue(oldCA, pki.CertRequest{CommonName: "system:node:host-1", Server: true, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if chainFor(oldLeaf.CertPEM, cross) != nil || chainFor(leaf.CertPEM, nil) != nil {
		t.Fatal("a chain for a certificate of another CA, or without a published one")
	}
	chain := chainFor(leaf.CertPEM, cross)
	for name, root := range map[string]pki.KeyPair{"old": oldCA, "new": newCA} {
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AppendCertsFromPEM(root.CertPEM)
		inter.AppendCertsFromPEM(chain)
		if _, err := pki.ParseCertificates(leaf.CertPEM)[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("the new serving certificate with its chain does not verify against the %s kubelet CA: %v", name, err)
		}
	}
}

func testCA(t *testing.T, name string) pki.KeyPair {
	t.Helper()
	kp, err := pki.NewCAFor(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}
