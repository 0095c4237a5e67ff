package join

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"hypershift.dev/internal/pki"
)

// followingRESTConfig is a client configuration with the kubelet's
// identity for the node daemon's long-lived clients, whose trust follows a
// root-CA rotation (trust.go): each handshake verifies the server with the
// root CAs in the kubelet's kubeconfig at that moment and presents the
// kubelet's client certificate as its file holds it then. A client made
// from the kubeconfig's data once would keep the old root CA and, after the
// rotation dropped it, fail on its next connection.
func (n *Node) followingRESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", n.KubeletKubeconfig())
	if err != nil {
		return nil, err
	}
	certFile, keyFile := cfg.CertFile, cfg.KeyFile
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%s names no client certificate file", n.KubeletKubeconfig())
	}
	tlsConfig := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified by VerifyConnection against the kubeconfig's current CAs.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return n.verifyWithKubeletCAs(cs)
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("kubelet client certificate: %w", err)
			}
			return &pair, nil
		},
	}
	return &rest.Config{
		Host:      cfg.Host,
		UserAgent: cfg.UserAgent,
		Transport: utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig}),
	}, nil
}

func (n *Node) verifyWithKubeletCAs(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the server sent no certificate")
	}
	kc, err := clientcmd.LoadFromFile(n.KubeletKubeconfig())
	if err != nil {
		return fmt.Errorf("kubelet kubeconfig: %w", err)
	}
	roots := x509.NewCertPool()
	for _, c := range kc.Clusters {
		roots.AppendCertsFromPEM(c.CertificateAuthorityData)
	}
	return pki.VerifyServer(cs.PeerCertificates, roots, cs.ServerName)
}
