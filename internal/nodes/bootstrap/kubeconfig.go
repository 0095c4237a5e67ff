package bootstrap

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Kubeconfig renders a kubelet's bootstrap kubeconfig: the hosted API
// server, its CA and the pool's token.
func Kubeconfig(server string, caPEM []byte, token Token) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hosted"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: token.String()}
	cfg.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "hosted", AuthInfo: "bootstrap"}
	cfg.CurrentContext = "bootstrap"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("render bootstrap kubeconfig: %w", err)
	}
	return out, nil
}

// Endpoint reads the API server address and CA of a kubeconfig's current
// context.
func Endpoint(kubeconfig []byte) (server string, caPEM []byte, err error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", nil, fmt.Errorf("parse kubeconfig: %w", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return "", nil, errors.New("kubeconfig has no current context")
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if cluster == nil || cluster.Server == "" {
		return "", nil, errors.New("kubeconfig names no server")
	}
	return cluster.Server, cluster.CertificateAuthorityData, nil
}
