package join

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"hypershift.dev/internal/nodes/join/jointest"
	"hypershift.dev/internal/pki"
)

// The node daemon's client skips Go's own verification only to verify each
// handshake itself against the CAs the kubelet's kubeconfig holds then: a
// server with a certificate of another CA is refused, and one of the
// kubeconfig's CA is reached — also after the kubeconfig changed to it.
func TestFollowingClientRefusesAForeignServer(t *testing.T) {
	ours, err := pki.NewCA("ours")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := pki.NewCA("foreign")
	if err != nil {
		t.Fatal(err)
	}
	client, err := pki.Issue(ours, pki.CertRequest{CommonName: "system:node:n", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(ca pki.KeyPair) string {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
		jointest.StartTLS(t, srv, ca, "kube-apiserver", tls.RequestClientCert)
		return srv.URL
	}
	n := &Node{DataDir: t.TempDir()}
	writeKubeletKubeconfig := func(server string, ca pki.KeyPair) {
		t.Helper()
		for name, data := range map[string][]byte{"client.crt": client.CertPEM, "client.key": client.KeyPEM} {
			if err := os.WriteFile(filepath.Join(n.DataDir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca.CertPEM}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(n.DataDir, "client.crt"), ClientKey: filepath.Join(n.DataDir, "client.key")}
		cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
		cfg.CurrentContext = "x"
		if err := clientcmd.WriteToFile(*cfg, n.KubeletKubeconfig()); err != nil {
			t.Fatal(err)
		}
	}
	genuine, impostor := serve(ours), serve(foreign)
	writeKubeletKubeconfig(genuine, ours)
	cfg, err := n.followingRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	transport := cfg.Transport.(*http.Transport)
	get := func(url string) error {
		// A new handshake each time: the check is per handshake.
		transport.CloseIdleConnections()
		resp, err := (&http.Client{Transport: transport}).Get(url) //nolint:noctx // a test's loopback request
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(genuine); err != nil {
		t.Fatalf("a server of the kubeconfig's CA: %v", err)
	}
	if err := get(impostor); err == nil {
		t.Fatal("a server with another CA's certificate was accepted")
	}
	// The kubeconfig now trusts the other CA only: the same client refuses
	// the first server from its next handshake on.
	writeKubeletKubeconfig(impostor, foreign)
	if err := get(genuine); err == nil {
		t.Fatal("a server of a CA the kubeconfig no longer holds was accepted")
	}
}
