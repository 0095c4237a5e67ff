// Package kubeconfig renders kubeconfig files for users of a control plane
// who authenticate with a client certificate or a bearer token.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Params describe one kubeconfig with a single cluster, user and context.
type Params struct {
	// Name is used for the cluster, the user and the context.
	Name      string
	Server    string
	CAPEM     []byte
	ClientPEM []byte
	KeyPEM    []byte
	// Token is a bearer token, for users without a client certificate.
	Token string
	// ClientCertFile and ClientKeyFile name the client certificate and key
	// instead of ClientPEM and KeyPEM; relative paths are relative to the
	// kubeconfig's directory. client-go re-reads files (not inline data)
	// when it opens a connection, so a component using them follows a
	// renewed certificate without a restart.
	ClientCertFile, ClientKeyFile string
}

// Render returns the kubeconfig as YAML.
func Render(p Params) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[p.Name] = &clientcmdapi.Cluster{Server: p.Server, CertificateAuthorityData: p.CAPEM}
	cfg.AuthInfos[p.Name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: p.ClientPEM, ClientKeyData: p.KeyPEM, Token: p.Token,
		ClientCertificate: p.ClientCertFile, ClientKey: p.ClientKeyFile,
	}
	cfg.Contexts[p.Name] = &clientcmdapi.Context{Cluster: p.Name, AuthInfo: p.Name}
	cfg.CurrentContext = p.Name
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("render kubeconfig %s: %w", p.Name, err)
	}
	return out, nil
}

// RESTConfig returns a client configuration for the same parameters.
func RESTConfig(p Params) *rest.Config {
	return &rest.Config{
		Host: p.Server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.CAPEM,
			CertData: p.ClientPEM,
			KeyData:  p.KeyPEM,
		},
		BearerToken: p.Token,
	}
}

// WithServer returns kc with every cluster's server set to server (the
// operator reaching a hosted API server at another address than clients
// do, with the same credentials).
func WithServer(kc []byte, server string) ([]byte, error) {
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	return clientcmd.Write(*cfg)
}
