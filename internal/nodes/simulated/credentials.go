package simulated

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	certificatesv1client "k8s.io/client-go/kubernetes/typed/certificates/v1"
	"k8s.io/client-go/tools/cache"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/nodes/bootstrap"
)

// csrTimeout bounds the wait for a CSR to be approved and signed.
const csrTimeout = 5 * time.Minute

// csrWaiter delivers issued certificates to the nodes that asked for them,
// from one CSR watch per agent instead of one per joining node.
type csrWaiter struct {
	mu      sync.Mutex
	waiting map[types.UID]chan csrResult
}

type csrResult struct {
	cert []byte
	err  error
}

func newCSRWaiter() *csrWaiter {
	return &csrWaiter{waiting: map[types.UID]chan csrResult{}}
}

// handler feeds the waiter from a CSR informer.
func (w *csrWaiter) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}
}

func (w *csrWaiter) observe(obj any) {
	csr, ok := obj.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return
	}
	var res csrResult
	switch {
	case len(csr.Status.Certificate) > 0:
		res.cert = csr.Status.Certificate
	default:
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
				res.err = fmt.Errorf("CSR %s %s: %s %s", csr.Name, c.Type, c.Reason, c.Message)
			}
		}
		if res.err == nil {
			return
		}
	}
	w.mu.Lock()
	ch := w.waiting[csr.UID]
	delete(w.waiting, csr.UID)
	w.mu.Unlock()
	if ch != nil {
		ch <- res
	}
}

// request creates a CSR and waits for its certificate.
func (w *csrWaiter) request(ctx context.Context, c certificatesv1client.CertificateSigningRequestInterface, lister func(name string) (*certificatesv1.CertificateSigningRequest, error),
	key *ecdsa.PrivateKey, subject pkix.Name, dnsNames []string, ips []net.IP, signer string, usages []certificatesv1.KeyUsage,
) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames, IPAddresses: ips}, key)
	if err != nil {
		return nil, fmt.Errorf("make CSR: %w", err)
	}
	created, err := c.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer,
			Usages:     usages,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create CSR: %w", err)
	}
	ch := make(chan csrResult, 1)
	w.mu.Lock()
	w.waiting[created.UID] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.waiting, created.UID)
		w.mu.Unlock()
	}()
	// The certificate may have been issued before we started waiting.
	if got, err := lister(created.Name); err == nil && got.UID == created.UID {
		w.observe(got)
	}
	ctx, cancel := context.WithTimeout(ctx, csrTimeout)
	defer cancel()
	select {
	case res := <-ch:
		return res.cert, res.err
	case <-ctx.Done():
		return nil, fmt.Errorf("CSR %s not signed within %s: %w", created.Name, csrTimeout, ctx.Err())
	}
}

// clientSubject is a node's client certificate subject.
func clientSubject(node string) pkix.Name {
	return pkix.Name{CommonName: bootstrap.NodeUserPrefix + node, Organization: []string{bootstrap.NodesGroup}}
}

// keyPair is a certificate and its key, PEM-encoded, stored together in one
// 0600 file as the kubelet's *-current.pem files are.
type keyPair struct {
	certPEM, keyPEM []byte
	notAfter        time.Time
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func loadKeyPair(path string) (keyPair, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return keyPair{}, err
	}
	var kp keyPair
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case "CERTIFICATE":
			kp.certPEM = append(kp.certPEM, pem.EncodeToMemory(block)...)
		case "EC PRIVATE KEY":
			kp.keyPEM = pem.EncodeToMemory(block)
		}
	}
	pair, err := tls.X509KeyPair(kp.certPEM, kp.keyPEM)
	if err != nil {
		return keyPair{}, fmt.Errorf("%s: %w", path, err)
	}
	if pair.Leaf == nil {
		return keyPair{}, errors.New(path + ": no certificate")
	}
	kp.notAfter = pair.Leaf.NotAfter
	return kp, nil
}

func (kp keyPair) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append(append([]byte(nil), kp.certPEM...), kp.keyPEM...), 0o600)
}

// usable says whether a stored certificate may still be used: it has at
// least a tenth of a day left.
func (kp keyPair) usable(now time.Time) bool {
	return now.Add(144 * time.Minute).Before(kp.notAfter)
}
