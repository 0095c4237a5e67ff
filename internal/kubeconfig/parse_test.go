package kubeconfig

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// planted is a kubeconfig as Render makes it, changed by edit: what a
// party who can write the Secret it is kept in could plant.
func planted(t *testing.T, edit func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config)) []byte {
	t.Helper()
	kc, err := Render(Params{Name: "c", Server: "https://127.0.0.1:6443", CAPEM: []byte("ca"), ClientPEM: []byte("cert"), KeyPEM: []byte("key")})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg.Clusters["c"], cfg.AuthInfos["c"], cfg)
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParseReadsOnlyInlineCredentials: a kubeconfig of inline data gives
// exactly its server, CA, certificate and key; every field client-go would
// act on with the reader's rights — a command, a file, a proxy, skipped
// verification, impersonation — is refused, naming the field.
func TestParseReadsOnlyInlineCredentials(t *testing.T) {
	cfg, err := Parse(planted(t, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
		c.TLSServerName = "kube-apiserver"
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || string(cfg.CAData) != "ca" || string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" || cfg.ServerName != "kube-apiserver" {
		t.Errorf("config %+v", cfg)
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Proxy != nil || cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.BearerTokenFile != "" {
		t.Errorf("config carries more than inline data: %+v", cfg)
	}
	token, err := Parse(planted(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
		u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, "abc.def"
	}))
	if err != nil || token.BearerToken != "abc.def" {
		t.Errorf("a token kubeconfig: %+v, %v", token, err)
	}

	for _, tc := range []struct {
		name, want string
		edit       func(c *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config)
	}{
		{"exec plugin", "users[].user.exec", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "touch /tmp/owned"}, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}},
		{"auth provider", "users[].user.auth-provider", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}},
		{"token file", "users[].user.tokenFile", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}},
		{"client key path", "users[].user.client-key (a file)", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientKey = "/etc/hypershift/pki/admin.key"
		}},
		{"client certificate path", "users[].user.client-certificate (a file)", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientCertificate = "/etc/hypershift/pki/admin.crt"
		}},
		{"CA path", "certificate-authority (a file)", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.CertificateAuthority = "/etc/ssl/certs/ca-certificates.crt"
		}},
		{"proxy", "proxy-url", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.ProxyURL = "http://127.0.0.1:3128"
		}},
		{"skip verification", "insecure-skip-tls-verify", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.InsecureSkipTLSVerify = true
		}},
		{"impersonation", "impersonation", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Impersonate = "system:admin"
		}},
		{"basic auth", "username/password", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.Username, u.Password = "admin", "admin"
		}},
		{"plain http", "want https://host:port", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.Server = "http://127.0.0.1:8080"
		}},
		{"no inline CA", "no certificate-authority-data", func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			c.CertificateAuthorityData = nil
		}},
		{"a key without its certificate", "go together", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientCertificateData = nil
		}},
		{"no credentials", "no credentials", func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
			u.ClientCertificateData, u.ClientKeyData = nil, nil
		}},
		{"no current context", "no current-context", func(_ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
			cfg.CurrentContext = ""
		}},
		{"a context naming a missing user", "which it does not have", func(_ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
			cfg.Contexts["c"].AuthInfo = "other"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(planted(t, tc.edit))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %+v, %v; want an error naming %q", cfg, err, tc.want)
			}
		})
	}

	t.Run("too large", func(t *testing.T) {
		if _, err := Parse(make([]byte, MaxSize+1)); err == nil || !strings.Contains(err.Error(), "bytes") {
			t.Errorf("Parse of %d bytes: %v, want refused for its size", MaxSize+1, err)
		}
	})
}

// TestSanitizeKeepsOnlyWhatParseReads: the kubeconfig handed on carries
// the server, CA, server name and credentials, and none of another
// cluster or user the original had; one Parse refuses is refused.
func TestSanitizeKeepsOnlyWhatParseReads(t *testing.T) {
	out, err := Sanitize(planted(t, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo, cfg *clientcmdapi.Config) {
		c.TLSServerName = "infra"
		cfg.Contexts[cfg.CurrentContext].Namespace = "guests"
		cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh"}}
		cfg.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://10.0.0.9"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.AuthInfos) != 1 || len(cfg.Clusters) != 1 || len(cfg.Contexts) != 1 {
		t.Fatalf("sanitized kubeconfig has %d users, %d clusters, %d contexts; want one each", len(cfg.AuthInfos), len(cfg.Clusters), len(cfg.Contexts))
	}
	c, u := cfg.Clusters["cluster"], cfg.AuthInfos["cluster"]
	if c == nil || u == nil || c.Server != "https://127.0.0.1:6443" || c.TLSServerName != "infra" || string(c.CertificateAuthorityData) != "ca" || string(u.ClientCertificateData) != "cert" || string(u.ClientKeyData) != "key" {
		t.Errorf("sanitized kubeconfig: %s", out)
	}
	if _, err := Sanitize(planted(t, func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo, _ *clientcmdapi.Config) {
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"}
	})); err == nil || !strings.Contains(err.Error(), "users[].user.exec") {
		t.Errorf("an exec kubeconfig: %v, want refused naming users[].user.exec", err)
	}
}
