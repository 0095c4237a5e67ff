package kubeconfig

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// MaxSize is the largest kubeconfig Parse reads: the operator's are a few
// kilobytes (a CA bundle of two CAs, a certificate and a key).
const MaxSize = 256 << 10

// Parse returns the client configuration of a kubeconfig that came from a
// place others can write (a Secret, a file a tenant handed over): only its
// current context's server, inline CA, inline client certificate and key,
// inline bearer token and TLS server name are read. Everything client-go
// would otherwise act on — an exec plugin or auth provider (a command run
// with the reader's rights), a token file or certificate and key paths
// (the reader's files), a proxy URL, insecure-skip-tls-verify,
// impersonation, basic auth — is refused, naming the field; so is a server
// that is not https or a cluster without an inline CA. The configuration is
// built field by field, so nothing else of the kubeconfig reaches it.
func Parse(data []byte) (*rest.Config, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("kubeconfig: %d bytes, more than the %d a kubeconfig of inline credentials needs", len(data), MaxSize)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if cfg.CurrentContext == "" {
		return nil, errors.New("kubeconfig: no current-context")
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil {
		return nil, fmt.Errorf("kubeconfig: current-context %q is not among its contexts", cfg.CurrentContext)
	}
	if kctx.Namespace != "" || len(kctx.Extensions) > 0 {
		// Harmless to a client, but no kubeconfig of ours has them.
		return nil, fmt.Errorf("kubeconfig: context %q: only cluster and user are read", cfg.CurrentContext)
	}
	cluster := cfg.Clusters[kctx.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("kubeconfig: context %q names cluster %q, which it does not have", cfg.CurrentContext, kctx.Cluster)
	}
	user := cfg.AuthInfos[kctx.AuthInfo]
	if user == nil {
		return nil, fmt.Errorf("kubeconfig: context %q names user %q, which it does not have", cfg.CurrentContext, kctx.AuthInfo)
	}
	if refused := refusedFields(cluster, user); len(refused) > 0 {
		return nil, fmt.Errorf("kubeconfig: %s: only inline credentials are read", strings.Join(refused, ", "))
	}
	u, err := url.Parse(cluster.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("kubeconfig: cluster %q: server %q: want https://host:port", kctx.Cluster, cluster.Server)
	}
	if len(cluster.CertificateAuthorityData) == 0 {
		return nil, fmt.Errorf("kubeconfig: cluster %q: no certificate-authority-data (the server's CA must be given inline)", kctx.Cluster)
	}
	if err := checkCredentials(user); err != nil {
		return nil, fmt.Errorf("kubeconfig: user %q: %w", kctx.AuthInfo, err)
	}
	return &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
		BearerToken: user.Token,
	}, nil
}

// checkCredentials wants an inline certificate and key, or a token.
func checkCredentials(user *clientcmdapi.AuthInfo) error {
	hasCert := len(user.ClientCertificateData) > 0 || len(user.ClientKeyData) > 0
	switch {
	case hasCert && (len(user.ClientCertificateData) == 0 || len(user.ClientKeyData) == 0):
		return errors.New("client-certificate-data and client-key-data go together")
	case !hasCert && user.Token == "":
		return errors.New("no credentials (client-certificate-data and client-key-data, or token)")
	}
	return nil
}

// refusedFields names the fields of cluster and user Parse does not read.
func refusedFields(cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"clusters[].cluster.certificate-authority (a file)", cluster.CertificateAuthority != ""},
		{"clusters[].cluster.insecure-skip-tls-verify", cluster.InsecureSkipTLSVerify},
		{"clusters[].cluster.proxy-url", cluster.ProxyURL != ""},
		{"users[].user.exec", user.Exec != nil},
		{"users[].user.auth-provider", user.AuthProvider != nil},
		{"users[].user.tokenFile", user.TokenFile != ""},
		{"users[].user.client-certificate (a file)", user.ClientCertificate != ""},
		{"users[].user.client-key (a file)", user.ClientKey != ""},
		{"users[].user.as (impersonation)", user.Impersonate != "" || user.ImpersonateUID != "" || len(user.ImpersonateGroups) > 0 || len(user.ImpersonateUserExtra) > 0},
		{"users[].user.username/password", user.Username != "" || user.Password != ""},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// Sanitize is the kubeconfig of what Parse reads of data, and nothing
// else: a kubeconfig others wrote, handed on to a program that would act
// on the rest.
func Sanitize(data []byte) ([]byte, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("kubeconfig: %d bytes, more than the %d a kubeconfig of inline credentials needs", len(data), MaxSize)
	}
	// A context's namespace (kubectl config set-context --namespace) is
	// not handed on, and so not refused.
	if loaded, err := clientcmd.Load(data); err == nil {
		if kctx := loaded.Contexts[loaded.CurrentContext]; kctx != nil && kctx.Namespace != "" {
			kctx.Namespace = ""
			if data, err = clientcmd.Write(*loaded); err != nil {
				return nil, err
			}
		}
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, err
	}
	const name = "cluster"
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	out.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	out.CurrentContext = name
	return clientcmd.Write(*out)
}
