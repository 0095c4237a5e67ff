package join

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// trustInterval is how often a node's daemon compares what the node trusts
// with the cluster's join information.
const trustInterval = 5 * time.Second

// followTrust keeps the node in step with a root-CA rotation
// (docs/security.md, "CA rotation"): it reads the join information
// anonymously over a connection verified with the root CA bundle the node
// trusts now, so a new CA is taken only from the server trusted before.
// A changed root bundle goes into the kubelet's kubeconfig, a changed
// client bundle into the kubelet's client-ca.crt, and a client
// certificate the signing client CA (the bundle's first) did not sign is
// renewed with the node's current identity, and a serving certificate the
// signing kubelet CA did not sign is removed; then the kubelet and
// kube-proxy, which read their kubeconfig and certificates at start, are
// restarted (pods keep running; the kubelet asks for a new serving
// certificate), and the Node notes what it trusts.
func (n *Node) followTrust(ctx context.Context, apply func(context.Context, []runtime.Spec) error, log logr.Logger) {
	for {
		if err := n.syncTrust(ctx, apply, log); err != nil && ctx.Err() == nil {
			log.Error(err, "follow the cluster's CAs", "node", n.Name)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(trustInterval):
		}
	}
}

// publishedTrust is what the join information says the node should trust.
type publishedTrust struct {
	roots, clientCAs, kubeletCAs []*x509.Certificate
	// kubeletCrossSigned: the signing kubelet CA cross-signed by the one
	// it replaced, while that one is trusted (PEM; empty otherwise).
	kubeletCrossSigned []byte
}

// publishedTrust reads the CA bundles of the join information anonymously,
// verifying the server with the root CAs the node trusts now.
func (n *Node) publishedTrust(ctx context.Context) (publishedTrust, error) {
	anon, err := kubernetes.NewForConfig(&rest.Config{Host: n.Server, TLSClientConfig: rest.TLSClientConfig{CAData: []byte(n.CA)}, Timeout: 10 * time.Second})
	if err != nil {
		return publishedTrust{}, err
	}
	info, err := anon.CoreV1().ConfigMaps(bootstrap.JoinInfoNamespace).Get(ctx, bootstrap.JoinInfoName, metav1.GetOptions{})
	if err != nil {
		return publishedTrust{}, fmt.Errorf("join information: %w", err)
	}
	p := publishedTrust{
		roots:              pki.ParseCertificates([]byte(info.Data[bootstrap.JoinInfoCA])),
		clientCAs:          pki.ParseCertificates([]byte(info.Data[bootstrap.JoinInfoClientCA])),
		kubeletCAs:         pki.ParseCertificates([]byte(info.Data[bootstrap.JoinInfoKubeletCA])),
		kubeletCrossSigned: []byte(info.Data[bootstrap.JoinInfoKubeletCACrossSigned]),
	}
	for _, c := range slices.Concat(p.roots, p.clientCAs, p.kubeletCAs, pki.ParseCertificates(p.kubeletCrossSigned)) {
		if !c.IsCA || c.KeyUsage&x509.KeyUsageCertSign == 0 {
			return publishedTrust{}, fmt.Errorf("join information holds %q, which is not a CA certificate", c.Subject.CommonName)
		}
	}
	return p, nil
}

// nodeStateMu makes the daemon's writers of node.json and the node's specs
// (a root-CA rotation here, an upgrade in upgrade.go) take turns.
var nodeStateMu sync.Mutex

func (n *Node) syncTrust(ctx context.Context, apply func(context.Context, []runtime.Spec) error, log logr.Logger) error {
	nodeStateMu.Lock()
	defer nodeStateMu.Unlock()
	kc, err := clientcmd.LoadFromFile(n.KubeletKubeconfig())
	if errors.Is(err, os.ErrNotExist) {
		return nil // the kubelet has no credentials yet
	}
	if err != nil {
		return fmt.Errorf("kubelet kubeconfig: %w", err)
	}
	published, err := n.publishedTrust(ctx)
	if err != nil || len(published.roots) == 0 || len(published.clientCAs) == 0 {
		return err
	}
	rootCerts, clientCAs := published.roots, published.clientCAs
	// Compared and stored re-encoded, as join stores them: the same CAs
	// written differently are no change.
	roots, clientBundle := encodeCertificates(rootCerts), encodeCertificates(clientCAs)
	changed, err := n.followRootBundle(kc, roots, log)
	if err != nil {
		return err
	}
	if clientBundle != encodeCertificates(pki.ParseCertificates([]byte(n.ClientCA))) {
		n.ClientCA, changed = clientBundle, true
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", n.KubeletKubeconfig())
	if err != nil {
		return err
	}
	certPath := cfg.CertFile
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return fmt.Errorf("kubelet client certificate: %w", err)
	}
	if signer := signerIn(certPEM, clientCAs); signer != clientCAs[0] {
		renewed, err := n.renewKubeletClientCertificate(ctx, cfg, certPath)
		if err != nil {
			return err
		}
		certPEM = renewed
		if signerIn(certPEM, clientCAs) == clientCAs[0] {
			log.Info("renewed the kubelet's client certificate for the cluster's new client CA", "node", n.Name)
		}
		changed = true
	}
	servingPEM, err := n.renewStaleServingCertificate(ctx, cfg, published)
	if err != nil {
		return err
	}
	if servingPEM != nil {
		log.Info("renewed the kubelet's serving certificate for the cluster's new kubelet CA", "node", n.Name)
		changed = true
	}
	if changed {
		// The renewed serving certificate is in the digest: the kubelet
		// restarts for each, also when a controller manager not yet given
		// the new CA signed the one asked for before.
		sum := sha256.Sum256(slices.Concat([]byte(n.CA+n.ClientCA), certPEM, servingPEM))
		n.Trust = hex.EncodeToString(sum[:8])
		if err := n.Save(); err != nil {
			return err
		}
		if err := apply(ctx, n.Specs()); err != nil {
			return err
		}
	}
	// A certificate signed by a controller manager not yet given the new
	// CA is renewed again next time.
	return n.noteTrust(ctx, cfg, rootCerts, clientCAs, signerIn(certPEM, clientCAs))
}

// followRootBundle writes a changed root CA bundle into the kubelet's
// kubeconfig.
func (n *Node) followRootBundle(kc *clientcmdapi.Config, roots string, log logr.Logger) (bool, error) {
	if roots == encodeCertificates(pki.ParseCertificates([]byte(n.CA))) {
		return false, nil
	}
	for _, cluster := range kc.Clusters {
		cluster.CertificateAuthorityData = []byte(roots)
		cluster.CertificateAuthority = ""
	}
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return false, err
	}
	if err := atomicfile.Write(n.KubeletKubeconfig(), data, 0o600); err != nil {
		return false, fmt.Errorf("kubelet kubeconfig: %w", err)
	}
	n.CA = roots
	log.Info("the cluster's root CA bundle changed: the kubelet's kubeconfig follows", "node", n.Name)
	return true, nil
}

// renewKubeletClientCertificate asks for a client certificate with the
// node's current one, as the kubelet renews its own, and points the
// kubelet's current certificate (a symbolic link, as the kubelet keeps it)
// at it.
func (n *Node) renewKubeletClientCertificate(ctx context.Context, cfg *rest.Config, current string) ([]byte, error) {
	issued, key, err := n.requestCertificate(ctx, cfg, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: bootstrap.NodeUserPrefix + n.Name, Organization: []string{bootstrap.NodesGroup}},
	}, certificatesv1.KubeAPIServerClientKubeletSignerName, certificatesv1.UsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("client certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	pair := append(append([]byte(nil), issued...), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})...)
	if err := writeCurrentPair(current, "kubelet-client", pair); err != nil {
		return nil, err
	}
	return issued, nil
}

// writeCurrentPair writes pair beside current in a dated file, as the
// kubelet's certificate manager keeps them, and points the link current
// at it.
func writeCurrentPair(current, prefix string, pair []byte) error {
	file := filepath.Join(filepath.Dir(current), fmt.Sprintf("%s-%s.pem", prefix, time.Now().UTC().Format("2006-01-02-15-04-05")))
	if err := atomicfile.Write(file, pair, 0o600); err != nil {
		return err
	}
	link := current + ".new"
	_ = os.Remove(link)
	if err := os.Symlink(file, link); err != nil {
		return err
	}
	return os.Rename(link, current)
}

// requestCertificate asks for a certificate of signer with the node's
// current credentials (cfg) and a new key, and waits until it is issued.
func (n *Node) requestCertificate(ctx context.Context, cfg *rest.Config, tmpl *x509.CertificateRequest, signer string, usage certificatesv1.KeyUsage) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, nil, err
	}
	kube, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, nil, err
	}
	csr, err := kube.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER}),
			SignerName: signer,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, usage},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("CSR: %w", err)
	}
	var issued []byte
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := kube.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
				return false, fmt.Errorf("CSR %s %s: %s", got.Name, c.Type, c.Message)
			}
		}
		issued = got.Status.Certificate
		return len(issued) > 0, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("CSR %s: %w", csr.Name, err)
	}
	return issued, key, nil
}

// noteTrust puts what the node trusts on its Node, for the rotation's
// DistributeBundle phase; unchanged annotations are not written again.
func (n *Node) noteTrust(ctx context.Context, cfg *rest.Config, roots, clientCAs []*x509.Certificate, signer *x509.Certificate) error {
	hashes := func(certs []*x509.Certificate) string {
		out := make([]string, 0, len(certs))
		for _, c := range certs {
			out = append(out, pki.PublicKeyHash(c))
		}
		return strings.Join(out, ",")
	}
	signerHash := "none"
	if signer != nil {
		signerHash = pki.PublicKeyHash(signer)
	}
	want := map[string]string{
		hypershiftv1alpha1.NodeTrustedRootCAsAnnotation:   hashes(roots),
		hypershiftv1alpha1.NodeTrustedClientCAsAnnotation: hashes(clientCAs),
		hypershiftv1alpha1.NodeClientCAAnnotation:         signerHash,
	}
	kube, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return err
	}
	node, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	same := true
	for k, v := range want {
		same = same && node.Annotations[k] == v
	}
	if same {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// signerIn is the CA of cas that signed the first certificate of certPEM.
func signerIn(certPEM []byte, cas []*x509.Certificate) *x509.Certificate {
	certs := pki.ParseCertificates(certPEM)
	if len(certs) == 0 {
		return nil
	}
	for _, ca := range cas {
		if certs[0].CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	return nil
}

func encodeCertificates(certs []*x509.Certificate) string {
	var out []byte
	for _, c := range certs {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return string(out)
}
