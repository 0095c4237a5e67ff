package hostedcluster

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// The kubelet (serving) CA (docs/security.md, "CA rotation"): the API
// server verifies kubelets with it and reads it only at start
// (pki.ReadOnceCANames): it trusts the old CA alone until DropOld restarts
// it with the new one alone. The kubelets' serving certificates, signed by
// the controller manager, carry no chain, so the join information carries
// the new CA cross-signed by the old one (pki.CrossSignedCA), which a node
// serving a certificate of the new CA appends; nodes renew their serving
// certificates once the join information names the new CA as the signing
// one (DistributeBundle), and DropOld waits until every node did.

// nodesServingFromKubeletCA waits for every Node's newest issued
// kubelet-serving CSR to carry a certificate of the signing kubelet CA:
// what the API server will verify the node's kubelet with once DropOld
// dropped the old CA. Nodes of hypershift (simulated, joined) renew when
// the join information names a new signing kubelet CA; another kubelet
// renews on its own schedule, and the phase waits for it.
func (a hostedAPI) nodesServingFromKubeletCA(ctx context.Context, cp *pki.ControlPlane) (rotationObservation, error) {
	var nodes corev1.NodeList
	if err := a.do(ctx, cp.Admin, http.MethodGet, "/api/v1/nodes", nil, &nodes); err != nil {
		return rotationObservation{waiting: "the cluster's Nodes: " + err.Error()}, nil
	}
	var csrs certificatesv1.CertificateSigningRequestList
	if err := a.do(ctx, cp.Admin, http.MethodGet, "/apis/certificates.k8s.io/v1/certificatesigningrequests", nil, &csrs); err != nil {
		return rotationObservation{waiting: "the cluster's CertificateSigningRequests: " + err.Error()}, nil
	}
	if pending := nodesNotServingFrom(nodes.Items, csrs.Items, cp.KubeletCA); len(pending) > 0 {
		return rotationObservation{waiting: fmt.Sprintf("%d Nodes to serve a certificate of the new kubelet CA (a kubelet-serving CSR signed by it; hypershift's nodes renew on their own, another kubelet on its own schedule or when its serving certificate is removed and it restarts): %s",
			len(pending), strings.Join(firstN(pending, 5), ", "))}, nil
	}
	return rotationObservation{done: true}, nil
}

// nodesNotServingFrom names the nodes whose newest issued kubelet-serving
// CSR is missing or not signed by ca. Pure.
func nodesNotServingFrom(nodes []corev1.Node, csrs []certificatesv1.CertificateSigningRequest, ca pki.KeyPair) []string {
	newest := map[string]*certificatesv1.CertificateSigningRequest{}
	for i := range csrs {
		csr := &csrs[i]
		node := bootstrap.NodeNameOf(csr)
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || node == "" || len(csr.Status.Certificate) == 0 {
			continue
		}
		if cur, ok := newest[node]; !ok || cur.CreationTimestamp.Before(&csr.CreationTimestamp) {
			newest[node] = csr
		}
	}
	var pending []string
	for _, n := range nodes {
		csr, ok := newest[n.Name]
		if !ok || !pki.SignedBy(pki.KeyPair{CertPEM: csr.Status.Certificate}, ca) {
			pending = append(pending, n.Name)
		}
	}
	return pending
}
