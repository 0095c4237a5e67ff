package simulated

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// trustInterval is how often the agent compares its nodes' client
// certificates with the cluster's published client CAs.
const trustInterval = 5 * time.Second

// followTrust keeps the nodes' credentials in step with a root-CA rotation
// (docs/security.md, "CA rotation"). The API server's CA bundle comes with
// the bootstrap kubeconfig: a changed one restarts the agent. The client
// CA bundle is read from the join information, over a connection verified
// with that bundle: its first certificate is the CA that signs. A node
// whose client certificate another CA signed renews it with its current
// identity (a CSR the controller manager approves as a self-renewal), and
// every node reports what it trusts and which CA signed its certificate in
// annotations the rotation waits for. A serving certificate the signing
// kubelet CA (the join information's kubelet bundle, first) did not sign
// is renewed too; the rotation sees it in the node's CSRs.
func (a *Agent) followTrust(ctx context.Context) {
	t := time.NewTicker(trustInterval)
	defer t.Stop()
	for {
		if err := a.checkTrust(ctx); err != nil && ctx.Err() == nil {
			a.log.Error(err, "follow the cluster's CAs")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) checkTrust(ctx context.Context) error {
	info, err := a.anon.CoreV1().ConfigMaps(bootstrap.JoinInfoNamespace).Get(ctx, bootstrap.JoinInfoName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("join information: %w", err)
	}
	clientCAs := pki.ParseCertificates([]byte(info.Data[bootstrap.JoinInfoClientCA]))
	if len(clientCAs) == 0 {
		return nil // published by an older operator: nothing to follow
	}
	kubeletCAs := pki.ParseCertificates([]byte(info.Data[bootstrap.JoinInfoKubeletCA]))
	var roots []string
	for _, c := range pki.ParseCertificates(a.caPEM) {
		roots = append(roots, pki.PublicKeyHash(c))
	}
	for _, n := range a.allNodes() {
		if !n.isJoined() {
			continue
		}
		if err := n.followTrust(ctx, clientCAs, strings.Join(roots, ",")); err != nil && ctx.Err() == nil {
			n.log.Error(err, "follow the cluster's CAs")
		}
		if a.opts.ServingCertificates && len(kubeletCAs) > 0 {
			if err := n.followKubeletCA(ctx, kubeletCAs[0]); err != nil && ctx.Err() == nil {
				n.log.Error(err, "follow the cluster's kubelet CA")
			}
		}
	}
	return nil
}

// followTrust renews the node's client certificate when the signing client
// CA (clientCAs[0]) did not sign it, then notes the trust on the Node.
func (n *node) followTrust(ctx context.Context, clientCAs []*x509.Certificate, roots string) error {
	kp, err := loadKeyPair(n.clientPath())
	if err != nil {
		return err
	}
	signer := signerOf(kp.certPEM, clientCAs)
	if signer != clientCAs[0] {
		if kp, err = n.renewClientCertificate(ctx); err != nil {
			return err
		}
		// Signed by a controller manager not yet given the new CA: it is
		// renewed again next time.
		signer = signerOf(kp.certPEM, clientCAs)
	}
	signerHash := "none"
	if signer != nil {
		signerHash = pki.PublicKeyHash(signer)
	}
	trustedClients := make([]string, 0, len(clientCAs))
	for _, c := range clientCAs {
		trustedClients = append(trustedClients, pki.PublicKeyHash(c))
	}
	noted := roots + "/" + strings.Join(trustedClients, ",") + "/" + signerHash
	n.mu.Lock()
	same := n.trustNoted == noted
	core := n.core
	n.mu.Unlock()
	if same {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		hypershiftv1alpha1.NodeTrustedRootCAsAnnotation:   roots,
		hypershiftv1alpha1.NodeTrustedClientCAsAnnotation: strings.Join(trustedClients, ","),
		hypershiftv1alpha1.NodeClientCAAnnotation:         signerHash,
	}}})
	if err != nil {
		return err
	}
	if _, err := core.Nodes().Patch(ctx, n.m.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("note trust on node: %w", err)
	}
	n.mu.Lock()
	n.trustNoted = noted
	n.mu.Unlock()
	return nil
}

// followKubeletCA renews the node's serving certificate when the signing
// kubelet CA did not sign it: the API server drops the old kubelet CA at
// the end of a rotation. A certificate still being asked for the first
// time is left to servingCertificate; one signed by a controller manager
// not yet given the new CA is renewed again next time.
func (n *node) followKubeletCA(ctx context.Context, signing *x509.Certificate) error {
	kp, err := loadKeyPair(n.servingPath())
	if err != nil {
		return nil //nolint:nilerr // no serving certificate yet: servingCertificate asks for it
	}
	if signerOf(kp.certPEM, []*x509.Certificate{signing}) != nil {
		return nil
	}
	if _, err := n.requestServingCertificate(ctx); err != nil {
		return fmt.Errorf("renew serving certificate: %w", err)
	}
	n.log.Info("renewed serving certificate for the cluster's new kubelet CA")
	return nil
}

// renewClientCertificate asks for a new client certificate with the
// node's current one, as a kubelet renews, and uses it from the next
// connection on.
func (n *node) renewClientCertificate(ctx context.Context) (keyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return keyPair{}, err
	}
	n.mu.Lock()
	csrs := n.csrs
	n.mu.Unlock()
	certPEM, err := n.a.csrs.request(ctx, csrs, n.a.csrLister, key, clientSubject(n.m.Name), nil, nil,
		certificatesv1.KubeAPIServerClientKubeletSignerName,
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
	if err != nil {
		return keyPair{}, fmt.Errorf("renew client certificate: %w", err)
	}
	kp := keyPair{certPEM: certPEM, keyPEM: keyPEM}
	if err := kp.save(n.clientPath()); err != nil {
		return keyPair{}, err
	}
	if err := n.setCertificate(kp); err != nil {
		return keyPair{}, err
	}
	// Connections made with the old certificate go once idle.
	n.transport.CloseIdleConnections()
	n.log.Info("renewed client certificate for the cluster's new client CA")
	return kp, nil
}

// signerOf is the CA of cas that signed the first certificate of certPEM;
// nil when none did.
func signerOf(certPEM []byte, cas []*x509.Certificate) *x509.Certificate {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil
	}
	for _, ca := range cas {
		if cert.CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	return nil
}
