package join

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/join/jointest"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/releaseserver"
)

// TestEnsureReleaseWithTheKubeletsCertificate fetches a release the way
// the node daemon does on an upgrade: the releases ConfigMap over the API
// connection of kubelet.conf, then the binary from the release server with
// the same client certificate. A kubelet certificate of another cluster's
// CA gets nothing installed.
func TestEnsureReleaseWithTheKubeletsCertificate(t *testing.T) {
	cluster := jointest.NewCluster(t)
	root, clientCA := cluster.Root, cluster.ClientCA
	otherCA, err := pki.NewCA("other-client-ca")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	binary := []byte("the v1.36.3 release")
	sum := sha256.Sum256(binary)
	binPath := filepath.Join(dir, "kubernetes")
	if err := os.WriteFile(binPath, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	clientCAs, err := pki.ParseCertificate(clientCA.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := newPool(clientCAs)
	releases := &releaseserver.Handler{
		Releases: release.New(release.Release{Version: "v1.36.3", Binary: binPath, SHA256: hex.EncodeToString(sum[:])}),
		Authn:    &releaseserver.Authenticator{ClientCAs: pool},
		Log:      logr.Discard(),
	}
	// One server plays the API server (the releases ConfigMap, only to a
	// verified client certificate) and the release server.
	var srv *httptest.Server
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/kube-public/configmaps/hypershift-releases" {
			if len(r.TLS.PeerCertificates) == 0 {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			if _, err := r.TLS.PeerCertificates[0].Verify(x509VerifyClient(pool)); err != nil {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			info := bootstrap.ReleasesInfo{URL: srv.URL, SHA256: map[string]string{"v1.36.3": hex.EncodeToString(sum[:])}}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(&corev1.ConfigMap{Data: info.Data()})
			return
		}
		releases.ServeHTTP(w, r)
	}))
	jointest.StartTLS(t, srv, root, "kube-apiserver", tls.RequestClientCert)

	kubeconfig := func(ca pki.KeyPair) string {
		kp, err := pki.Issue(ca, pki.CertRequest{CommonName: "system:node:vm", Organization: []string{"system:nodes"}, Client: true})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "kubelet.conf")
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: root.CertPEM}
		cfg.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "node"}
		cfg.CurrentContext = "c"
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		return path
	}

	n := &Node{DataDir: t.TempDir()}
	if err := n.EnsureRelease(t.Context(), kubeconfig(otherCA), "v1.36.3"); err == nil || !strings.Contains(err.Error(), "hypershift-releases") {
		t.Fatalf("another cluster's certificate: %v, want the releases ConfigMap refused", err)
	}
	if _, err := os.Stat(n.ReleaseBinary("v1.36.3")); !os.IsNotExist(err) {
		t.Fatalf("a refused fetch installed %s (%v)", n.ReleaseBinary("v1.36.3"), err)
	}
	if err := n.EnsureRelease(t.Context(), kubeconfig(clientCA), "v1.36.3"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(n.ReleaseBinary("v1.36.3")); string(got) != string(binary) {
		t.Fatalf("installed %q", got)
	}
	if n.KubernetesVersion != "v1.36.3" || n.ReleaseSHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("node records %s %s", n.KubernetesVersion, n.ReleaseSHA256)
	}
	for _, spec := range n.Specs() {
		if spec.Name == Kubelet && spec.Command != n.ReleaseBinary("v1.36.3") {
			t.Fatalf("the kubelet runs %q, want the fetched release", spec.Command)
		}
	}
}

func newPool(certs ...*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

func x509VerifyClient(roots *x509.CertPool) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}
