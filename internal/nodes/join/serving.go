package join

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/rest"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// kubeletServingCurrent is the kubelet's current serving certificate and
// key (a symbolic link its certificate manager keeps in --cert-dir).
func (n *Node) kubeletServingCurrent() string {
	return filepath.Join(n.path("kubelet-pki"), "kubelet-server-current.pem")
}

// renewStaleServingCertificate follows a rotation of the kubelet CA
// (docs/security.md, "CA rotation"): when the signing kubelet CA (the
// join information's kubelet bundle, first) did not sign the kubelet's
// serving certificate, it asks for a new one as the kubelet would (a
// kubelet-serving CSR for the node's name and address, which the NodePool
// controller approves) and writes it for the kubelet, followed by the
// published cross-signed CA: the API server reads its kubelet CA only at
// start and holds the old one alone until the rotation's DropOld, and
// verifies the new certificate through that chain. It returns the new
// certificate (the kubelet, which loads it at start, must restart), nil
// when nothing changed; one signed by a controller manager not yet given
// the new CA is renewed again next time.
func (n *Node) renewStaleServingCertificate(ctx context.Context, cfg *rest.Config, published publishedTrust) ([]byte, error) {
	if len(published.kubeletCAs) == 0 {
		return nil, nil // published by an older operator: nothing to follow
	}
	current := n.kubeletServingCurrent()
	pemData, err := os.ReadFile(current)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // not issued yet: the kubelet asks for one
	}
	if err != nil {
		return nil, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	if signerIn(pemData, published.kubeletCAs[:1]) != nil {
		return nil, nil
	}
	tmpl := &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: bootstrap.NodeUserPrefix + n.Name, Organization: []string{bootstrap.NodesGroup}},
		DNSNames: []string{n.Name},
	}
	if ip := net.ParseIP(n.NodeIP); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	issued, key, err := n.requestCertificate(ctx, cfg, tmpl, certificatesv1.KubeletServingSignerName, certificatesv1.UsageServerAuth)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	pair := slices.Concat(issued, chainFor(issued, published.kubeletCrossSigned), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err := writeCurrentPair(current, "kubelet-server", pair); err != nil {
		return nil, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	return issued, nil
}

// chainFor is cross when it certifies the key that signed leaf (the new
// CA, cross-signed by the old one), else nothing.
func chainFor(leafPEM, cross []byte) []byte {
	leaves, crosses := pki.ParseCertificates(leafPEM), pki.ParseCertificates(cross)
	if len(leaves) == 0 || len(crosses) == 0 || leaves[0].CheckSignatureFrom(crosses[0]) != nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: crosses[0].Raw})
}
