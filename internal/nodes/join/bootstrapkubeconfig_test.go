package join

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/pki"
)

// writeKubeletKubeconfig writes a kubelet kubeconfig as the kubelet does
// after its client certificate was issued: the certificate in a file under
// its cert dir.
func writeKubeletKubeconfig(t *testing.T, n *Node, certPEM []byte) {
	t.Helper()
	cert := filepath.Join(n.DataDir, "kubelet-pki", "kubelet-client-current.pem")
	if err := os.MkdirAll(filepath.Dir(cert), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(cert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := `apiVersion: v1
kind: Config
clusters:
- cluster: {server: "https://192.0.2.10:6443"}
  name: default-cluster
contexts:
- context: {cluster: default-cluster, user: default-auth}
  name: default-context
current-context: default-context
users:
- name: default-auth
  user: {client-certificate: ` + cert + `, client-key: ` + cert + `}
`
	if err := atomicfile.Write(n.KubeletKubeconfig(), []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDropBootstrapKubeconfig(t *testing.T) {
	ca, err := pki.NewCA("client-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.Issue(ca, pki.CertRequest{CommonName: "system:node:host-1", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	n := testNode()
	n.DataDir = t.TempDir()
	if err := atomicfile.Write(n.BootstrapKubeconfigPath(), []byte("token"), 0o600); err != nil {
		t.Fatal(err)
	}
	exists := func() bool { _, err := os.Stat(n.BootstrapKubeconfigPath()); return err == nil }

	// No client certificate yet: the kubelet still needs the token.
	if gone, err := DropBootstrapKubeconfig(n, time.Now()); gone || err != nil || !exists() {
		t.Fatalf("before the certificate: gone=%v err=%v exists=%v", gone, err, exists())
	}
	writeKubeletKubeconfig(t, n, leaf.CertPEM)
	// An expired certificate: the kubelet would bootstrap again.
	if gone, err := DropBootstrapKubeconfig(n, time.Now().Add(pki.CertValidity+time.Hour)); gone || err != nil || !exists() {
		t.Fatalf("with an expired certificate: gone=%v err=%v exists=%v", gone, err, exists())
	}
	if gone, err := DropBootstrapKubeconfig(n, time.Now()); !gone || err != nil || exists() {
		t.Fatalf("with a valid certificate: gone=%v err=%v exists=%v", gone, err, exists())
	}
	if gone, err := DropBootstrapKubeconfig(n, time.Now()); !gone || err != nil {
		t.Fatalf("again: gone=%v err=%v", gone, err)
	}
}
