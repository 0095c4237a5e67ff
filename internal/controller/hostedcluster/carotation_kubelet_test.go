package hostedcluster

import (
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hypershift.dev/internal/pki"
)

func TestNodesNotServingFrom(t *testing.T) {
	oldCA, err := pki.NewCAFor("kubelet-ca-old", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCAFor("kubelet-ca-new", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	csr := func(node string, ca *pki.KeyPair, signer string, age time.Duration) certificatesv1.CertificateSigningRequest {
		c := certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(base.Add(-age))},
			Spec:       certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Username: "system:node:" + node},
		}
		if ca != nil {
			kp, err := pki.Issue(*ca, pki.CertRequest{CommonName: "system:node:" + node, Server: true, Validity: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			c.Status.Certificate = kp.CertPEM
		}
		return c
	}
	node := func(name string) corev1.Node { return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	nodes := []corev1.Node{node("renewed"), node("stale"), node("pending"), node("none"), node("client-only")}
	csrs := []certificatesv1.CertificateSigningRequest{
		csr("renewed", &oldCA, certificatesv1.KubeletServingSignerName, time.Hour),
		csr("renewed", &newCA, certificatesv1.KubeletServingSignerName, time.Minute),
		// An older CSR of the new CA does not count: the newest is old.
		csr("stale", &newCA, certificatesv1.KubeletServingSignerName, time.Hour),
		csr("stale", &oldCA, certificatesv1.KubeletServingSignerName, time.Minute),
		// Not issued yet: the node still serves its old certificate.
		csr("pending", &oldCA, certificatesv1.KubeletServingSignerName, time.Hour),
		csr("pending", nil, certificatesv1.KubeletServingSignerName, time.Minute),
		// A client certificate of the new CA is not a serving one.
		csr("client-only", &newCA, certificatesv1.KubeAPIServerClientKubeletSignerName, time.Minute),
	}
	got := nodesNotServingFrom(nodes, csrs, newCA)
	if want := []string{"stale", "pending", "none", "client-only"}; !slices.Equal(got, want) {
		t.Fatalf("waiting for %v, want %v", got, want)
	}
}
