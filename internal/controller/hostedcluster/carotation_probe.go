package hostedcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

// refusalProbeName is the key pair, signed by the old client CA before it is
// dropped, that DropOld uses to see the old CA refused.
const refusalProbeName = "ca-rotation-probe"

// probeCommonName is the user a rotation's probe certificates name.
const probeCommonName = "system:hypershift:ca-rotation-probe"

// observeCARotation looks at the running cluster for the effect of st's
// phase.
func (r *Reconciler) observeCARotation(ctx context.Context, s *scope, st *hypershiftv1alpha1.CARotationStatus) (rotationObservation, error) {
	ep := s.hcp.Status.ControlPlaneEndpoint
	if ep.Port == 0 || s.pki == nil {
		return rotationObservation{waiting: "the control plane's endpoint"}, nil
	}
	api := hostedAPI{addr: net.JoinHostPort(ep.Host, fmt.Sprint(ep.Port)), roots: s.pki.Bundle(pki.RootCAName)}
	etcdURLs := s.hcp.Status.EtcdClientURLs
	switch st.Phase {
	case hypershiftv1alpha1.CARotationTrustBoth:
		return observeTrustBoth(ctx, api, s.pki)
	case hypershiftv1alpha1.CARotationReissueLeaves:
		if obs := observeEtcdReissued(ctx, etcdURLs, s.pki); !obs.done {
			return obs, nil
		}
		return observeReissued(ctx, api, s.pki)
	case hypershiftv1alpha1.CARotationDistributeBundle:
		if err := api.publishCABundles(ctx, s.pki); err != nil {
			return rotationObservation{waiting: "the join information to carry the new CA bundles: " + err.Error()}, nil
		}
		if obs, err := api.nodesTrusting(ctx, s.pki, nodeTrust{root: s.pki.RootCA, trustedClient: s.pki.ClientCA, signer: s.pki.ClientCA}); err != nil || !obs.done {
			return obs, err
		}
		return api.nodesServingFromKubeletCA(ctx, s.pki)
	case hypershiftv1alpha1.CARotationDropOld:
		store := s.secretStore(ctx, r.Client, true)
		if obs := observeRestarted(s.hcp, st.PhaseSince.Time); !obs.done {
			return obs, nil
		}
		etcdProbe, ok, err := store.Get(etcdRefusalProbeName)
		if err != nil {
			return rotationObservation{}, err
		}
		if obs := observeEtcdDropped(ctx, etcdURLs, s.pki, etcdProbe, ok); !obs.done {
			return obs, nil
		}
		probe, ok, err := store.Get(refusalProbeName)
		if err != nil {
			return rotationObservation{}, err
		}
		return observeDropped(ctx, api, s.pki, probe, ok)
	}
	return rotationObservation{done: true}, nil
}

// observeTrustBoth: the API server accepts a certificate of the new
// client CA, and every node trusts the new root CA and, for the API
// server's calls to kubelets, the new client CA — before either signs.
func observeTrustBoth(ctx context.Context, api hostedAPI, cp *pki.ControlPlane) (rotationObservation, error) {
	next, ok := cp.Next[pki.ClientCAName]
	if !ok {
		return rotationObservation{waiting: "the new client CA"}, nil
	}
	probe, err := pki.Issue(next, pki.CertRequest{CommonName: probeCommonName, Client: true, Validity: 10 * time.Minute})
	if err != nil {
		return rotationObservation{}, err
	}
	if user, err := api.whoAmI(ctx, probe); err != nil || user != probeCommonName {
		return rotationObservation{waiting: fmt.Sprintf("the API server to accept a certificate of the new client CA (it answered user %q, %v)", user, err)}, nil
	}
	if err := api.publishCABundles(ctx, cp); err != nil {
		return rotationObservation{waiting: "the join information to carry the new CA bundles: " + err.Error()}, nil
	}
	return api.nodesTrusting(ctx, cp, nodeTrust{root: cp.Next[pki.RootCAName], trustedClient: next})
}

// observeReissued: the endpoint serves a certificate of the new root CA
// whose chain reaches the old root too, and accepts the new admin
// certificate.
func observeReissued(ctx context.Context, api hostedAPI, cp *pki.ControlPlane) (rotationObservation, error) {
	chain, err := api.servingChain(ctx)
	if err != nil {
		return rotationObservation{waiting: "the API server's serving certificate: " + err.Error()}, nil
	}
	if !verifiesWith(chain, cp.RootCA.CertPEM) {
		return rotationObservation{waiting: "the API server to serve a certificate of the new root CA"}, nil
	}
	if prev, ok := cp.Previous[pki.RootCAName]; ok && !verifiesWith(chain, prev.CertPEM) {
		return rotationObservation{waiting: "the API server's serving chain to reach the old root CA too"}, nil
	}
	if user, err := api.whoAmI(ctx, cp.Admin); err != nil || user != "system:admin" {
		return rotationObservation{waiting: fmt.Sprintf("the API server to accept the reissued admin certificate (it answered user %q, %v)", user, err)}, nil
	}
	return rotationObservation{done: true}, nil
}

// observeDropped: the endpoint serves no chain to the old root, and a
// certificate of the old client CA (probe, when one could be signed) is
// refused.
func observeDropped(ctx context.Context, api hostedAPI, cp *pki.ControlPlane, probe pki.KeyPair, haveProbe bool) (rotationObservation, error) {
	chain, err := api.servingChain(ctx)
	if err != nil {
		return rotationObservation{waiting: "the API server's serving certificate: " + err.Error()}, nil
	}
	if len(chain) != 1 || !verifiesWith(chain, cp.RootCA.CertPEM) {
		return rotationObservation{waiting: "the API server to serve its certificate without the chain to the old root CA"}, nil
	}
	if haveProbe {
		if user, err := api.whoAmI(ctx, probe); err == nil && user == probeCommonName {
			return rotationObservation{waiting: "the API server to refuse certificates of the old client CA"}, nil
		}
	}
	if err := api.publishCABundles(ctx, cp); err != nil {
		return rotationObservation{waiting: "the join information to carry the new CA bundles: " + err.Error()}, nil
	}
	// Nodes dropped the old CAs too (and their kubelets run again).
	return api.nodesTrusting(ctx, cp, nodeTrust{root: cp.RootCA, trustedClient: cp.ClientCA, signer: cp.ClientCA, only: true})
}

// hostedAPI reaches a hosted API server at its published endpoint,
// verifying it with roots. It uses plain HTTP clients, one per call: the
// probe certificates differ every time, and client-go would cache a
// transport for each.
type hostedAPI struct {
	addr  string
	roots []byte
}

func (a hostedAPI) client(cert pki.KeyPair) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(a.roots) {
		return nil, errors.New("no root CA")
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}}, nil
}

func (a hostedAPI) do(ctx context.Context, cert pki.KeyPair, method, path string, body []byte, into any) error {
	contentType := "application/json"
	if method == http.MethodPatch {
		contentType = "application/merge-patch+json"
	}
	c, err := a.client(cert)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+a.addr+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{code: resp.StatusCode, msg: fmt.Sprintf("%s %s: %s", method, path, resp.Status)}
	}
	return json.Unmarshal(data, into)
}

// whoAmI is the user the API server takes cert for.
func (a hostedAPI) whoAmI(ctx context.Context, cert pki.KeyPair) (string, error) {
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	body := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if err := a.do(ctx, cert, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", body, &review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// servingChain is the certificate chain the endpoint presents (read, then
// judged by verifiesWith).
func (a hostedAPI) servingChain(ctx context.Context) ([]*x509.Certificate, error) {
	return pki.ServedChain(ctx, a.addr)
}

// verifiesWith says whether chain's leaf verifies as a server certificate
// against the roots in rootsPEM, with the rest of chain as intermediates.
func verifiesWith(chain []*x509.Certificate, rootsPEM []byte) bool {
	roots := x509.NewCertPool()
	return roots.AppendCertsFromPEM(rootsPEM) && pki.VerifyServer(chain, roots, "") == nil
}

// nodeTrust is what every Node must report (its agent's annotations): a
// root CA it verifies the API server with, a client CA its kubelet
// accepts, and the CA that signed its client certificate; an empty key
// pair is not asked for.
type nodeTrust struct {
	root, trustedClient, signer pki.KeyPair
	// only: root and trustedClient must be the only CAs reported.
	only bool
}

// nodesTrusting waits for every Node to report want.
func (a hostedAPI) nodesTrusting(ctx context.Context, cp *pki.ControlPlane, want nodeTrust) (rotationObservation, error) {
	hash := func(kp pki.KeyPair) (string, error) {
		if len(kp.CertPEM) == 0 {
			return "", nil
		}
		return pki.CACertHash(kp.CertPEM)
	}
	root, err := hash(want.root)
	if err != nil {
		return rotationObservation{}, err
	}
	trustedClient, err := hash(want.trustedClient)
	if err != nil {
		return rotationObservation{}, err
	}
	signer, err := hash(want.signer)
	if err != nil {
		return rotationObservation{}, err
	}
	var nodes corev1.NodeList
	if err := a.do(ctx, cp.Admin, http.MethodGet, "/api/v1/nodes", nil, &nodes); err != nil {
		return rotationObservation{waiting: "the cluster's Nodes: " + err.Error()}, nil
	}
	lists := func(n corev1.Node, key, hash string) bool {
		if want.only && key != hypershiftv1alpha1.NodeClientCAAnnotation {
			return hash == "" || n.Annotations[key] == hash
		}
		return hash == "" || slices.Contains(strings.Split(n.Annotations[key], ","), hash)
	}
	var pending []string
	for _, n := range nodes.Items {
		if !lists(n, hypershiftv1alpha1.NodeTrustedRootCAsAnnotation, root) ||
			!lists(n, hypershiftv1alpha1.NodeTrustedClientCAsAnnotation, trustedClient) ||
			!lists(n, hypershiftv1alpha1.NodeClientCAAnnotation, signer) {
			pending = append(pending, n.Name)
		}
	}
	if len(pending) > 0 {
		return rotationObservation{waiting: fmt.Sprintf("%d Nodes to take the new CA bundles (and, from ReissueLeaves on, a client certificate of the new client CA): %s",
			len(pending), strings.Join(firstN(pending, 5), ", "))}, nil
	}
	return rotationObservation{done: true}, nil
}

// publishCABundles puts the CA bundles into the cluster's join information
// (kube-public), where node agents read them over a connection verified
// with the root CA they trust (docs/security.md, "CA rotation"). The
// client and kubelet bundles' first certificate is the CA that signs now;
// while the old kubelet CA is trusted, the new one cross-signed by it goes
// with them, for the nodes' serving certificates to carry. Written from
// the PKI, not from the API server's published client CA, which may lag.
func (a hostedAPI) publishCABundles(ctx context.Context, cp *pki.ControlPlane) error {
	var cm corev1.ConfigMap
	path := "/api/v1/namespaces/" + bootstrap.JoinInfoNamespace + "/configmaps/" + bootstrap.JoinInfoName
	if err := a.do(ctx, cp.Admin, http.MethodGet, path, nil, &cm); err != nil {
		if se := (*statusError)(nil); errors.As(err, &se) && se.code == http.StatusNotFound {
			return nil // no node ever joined: nothing to tell
		}
		return err
	}
	cross, err := cp.CrossSignedCA(pki.KubeletCAName, []byte(cm.Data[bootstrap.JoinInfoKubeletCACrossSigned]))
	if err != nil {
		return err
	}
	want := map[string]string{
		bootstrap.JoinInfoCA:                   string(cp.Bundle(pki.RootCAName)),
		bootstrap.JoinInfoClientCA:             string(cp.Bundle(pki.ClientCAName)),
		bootstrap.JoinInfoKubeletCA:            string(cp.Bundle(pki.KubeletCAName)),
		bootstrap.JoinInfoKubeletCACrossSigned: string(cross),
	}
	same := true
	for k, v := range want {
		same = same && cm.Data[k] == v
	}
	if same {
		return nil
	}
	data := map[string]any{}
	for k, v := range want {
		data[k] = v
		if v == "" {
			data[k] = nil // a merge patch removes the key
		}
	}
	patch, err := json.Marshal(map[string]any{"data": data})
	if err != nil {
		return err
	}
	return a.do(ctx, cp.Admin, http.MethodPatch, path, patch, &cm)
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// statusError is an API answer other than 2xx.
type statusError struct {
	code int
	msg  string
}

func (e *statusError) Error() string { return e.msg }
