// Package join makes a Linux host a node of a hosted cluster, the way
// `kubeadm join` does: it finds the cluster's CAs with nothing but a
// bootstrap token and a pinned CA hash (discovery), then runs a private
// containerd and the kubelet compiled into hypershift, which bootstraps its
// client certificate with the token. Reset undoes everything a join made on
// the host.
package join

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/cluster-bootstrap/token/jws"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/pki"
)

var (
	tokenPattern  = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	caHashPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Cluster is what discovery learned, and trusts, of a hosted cluster.
type Cluster struct {
	// Name is the hosted cluster as NAMESPACE/NAME.
	Name   string
	Server string
	// CAPEM is the pinned CA certificate alone: it verifies the API server.
	// ClientCAPEM, read over a connection verified by it, verifies the API
	// server's calls to the kubelet.
	CAPEM, ClientCAPEM []byte
	// NodePool is the pool the token was issued for.
	NodePool string
	Token    string
	// Network is the cluster's, as its join information says.
	Network bootstrap.Network
}

// Discover checks a join command against the cluster it names, before
// anything is written. Only one certificate is ever trusted: the one whose
// public key hashes to caHash, found in the anonymously read cluster-info.
// Everything else (cluster-info again with its token signature, the client
// CA, the cluster's name, token records) is read over TLS that trusts that
// certificate alone, and the token is sent only there, after cluster-info's
// signature proved the server knows the token's secret. Errors say which
// part is wrong.
func Discover(ctx context.Context, server, token, caHash string) (*Cluster, error) {
	m := tokenPattern.FindStringSubmatch(token)
	if m == nil {
		return nil, errors.New("--token must be ID.SECRET (6 and 16 characters of a-z0-9), as printed by `hypershift create join-command`")
	}
	tokenID, tokenSecret := m[1], m[2]
	if !caHashPattern.MatchString(caHash) {
		return nil, errors.New("--ca-cert-hash must be sha256:<64 hex digits>, as printed by `hypershift create join-command`")
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--server must be an https URL of the hosted API server, got %q", server)
	}

	// The first read trusts nobody: it only offers certificates, of which
	// the pinned one is picked.
	unverified, err := readConfigMap(ctx, insecureClient(), server, bootstrap.ClusterInfoName)
	if err != nil {
		return nil, err
	}
	ca, err := pinnedCA(server, unverified, caHash)
	if err != nil {
		return nil, err
	}
	pinned := pinnedClient(ca)
	clusterInfo, err := readConfigMap(ctx, pinned, server, bootstrap.ClusterInfoName)
	if err != nil {
		return nil, err
	}
	if _, err := pinnedCA(server, clusterInfo, caHash); err != nil {
		return nil, err
	}
	info, err := readConfigMap(ctx, pinned, server, bootstrap.JoinInfoName)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Name:   info[bootstrap.JoinInfoCluster],
		Server: server,
		CAPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}),
		Token:  token,
	}
	if c.ClientCAPEM, err = verifiedClientCA(c.Name, info[bootstrap.JoinInfoClientCA]); err != nil {
		return nil, err
	}
	if c.Network, err = bootstrap.ParseNetwork(info); err != nil {
		return nil, err
	}
	c.NodePool, err = checkToken(ctx, pinned, c, tokenID, tokenSecret, info, clusterInfo)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// pinnedCA finds the certificate of a cluster-info whose public key hashes
// to the pin. Other certificates of the bundle are ignored: an interceptor
// may append its own.
func pinnedCA(server string, clusterInfo map[string]string, caHash string) (*x509.Certificate, error) {
	bundle, err := bootstrap.ClusterInfoCA([]byte(clusterInfo[bootstrap.ClusterInfoKubeconfig]))
	if err != nil {
		return nil, fmt.Errorf("cluster information of %s: %w", server, err)
	}
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		return nil, fmt.Errorf("cluster information of %s: CA bundle: %w", server, err)
	}
	for _, cert := range certs {
		if subtle.ConstantTimeCompare([]byte(pki.PublicKeyHash(cert)), []byte(caHash)) == 1 {
			return cert, nil
		}
	}
	return nil, fmt.Errorf("the API server at %s has CA %s, not the --ca-cert-hash %s: the join command is for another cluster (or the connection is intercepted)",
		server, pki.PublicKeyHash(certs[0]), caHash)
}

// verifiedClientCA checks the client CA bundle the kubelet will trust for
// calls to it (exec, logs): read over the pinned connection only, it must
// be CA certificates and nothing else.
func verifiedClientCA(cluster, bundle string) ([]byte, error) {
	if bundle == "" {
		return nil, fmt.Errorf("join information of %s has no client CA yet; try again in a moment", cluster)
	}
	rest := []byte(bundle)
	var out []byte
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("client CA bundle of %s holds a %s, not only certificates", cluster, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("client CA bundle of %s: %w", cluster, err)
		}
		if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
			return nil, fmt.Errorf("client CA bundle of %s holds %q, which is not a CA certificate", cluster, cert.Subject.CommonName)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})...)
	}
	if len(bytes.TrimSpace(rest)) > 0 || len(out) == 0 {
		return nil, fmt.Errorf("client CA bundle of %s is not a PEM certificate bundle", cluster)
	}
	return out, nil
}

// freshTokenWait is how long a recorded token may take the API server to
// accept.
var freshTokenWait = 10 * time.Second

// unsignedTokenWait is how long a recorded, unexpired token may wait for
// the controller manager's bootstrapsigner to sign cluster-info with it:
// longer, as kubeadm's discovery waits, because a controller manager that
// is still starting (or restarting, after the API server came up) signs
// nothing — a machine booted with a new cluster joins as soon as it does.
var unsignedTokenWait = 3 * time.Minute

// checkToken checks the token and returns its NodePool: not expired by its
// record, cluster-info signed with it (the server knows its secret; only
// then is the token sent), and accepted by the API server. The token
// records of the join information tell an expired token, a wrong secret
// and a token this cluster never issued apart.
func checkToken(ctx context.Context, hc *http.Client, c *Cluster, tokenID, tokenSecret string, info, clusterInfo map[string]string) (string, error) {
	t := tokenCheck{
		hc:           hc,
		c:            c,
		id:           tokenID,
		secret:       tokenSecret,
		fresh:        "print a new join command with `hypershift create join-command --name " + clusterName(c.Name) + "`",
		deadline:     time.Now().Add(freshTokenWait),
		signDeadline: time.Now().Add(unsignedTokenWait),
	}
	t.rec, t.recorded = bootstrap.LookupToken(info, tokenID)
	if t.recorded && !time.Now().Before(t.rec.Expiration) {
		return "", fmt.Errorf("bootstrap token %s of NodePool %s expired at %s: %s",
			tokenID, t.rec.NodePool, t.rec.Expiration.UTC().Format(time.RFC3339), t.fresh)
	}
	if err := t.checkSignature(ctx, clusterInfo); err != nil {
		return "", err
	}
	return t.authenticate(ctx)
}

type tokenCheck struct {
	hc         *http.Client
	c          *Cluster
	id, secret string
	fresh      string
	rec        bootstrap.TokenRecord
	recorded   bool
	// deadline bounds the wait for the API server to accept the token,
	// signDeadline the wait for cluster-info's signature.
	deadline, signDeadline time.Time
}

func (t *tokenCheck) notIssued() error {
	return fmt.Errorf("bootstrap token %s was not issued by hosted cluster %s: it belongs to another cluster, or it is mistyped or deleted; %s", t.id, t.c.Name, t.fresh)
}

func (t *tokenCheck) wrongSecret() error {
	return fmt.Errorf("bootstrap token %s of NodePool %s was refused by %s: its secret part is wrong, or it was deleted; %s", t.id, t.rec.NodePool, t.c.Name, t.fresh)
}

// checkSignature waits for cluster-info's signature with the token and
// checks it.
func (t *tokenCheck) checkSignature(ctx context.Context, clusterInfo map[string]string) error {
	for {
		sig, signed := clusterInfo[bootstrap.ClusterInfoSignaturePrefix+t.id]
		switch {
		case signed && validSignature(sig, clusterInfo[bootstrap.ClusterInfoKubeconfig], t.id, t.secret):
			return nil
		case signed && t.recorded:
			return t.wrongSecret()
		case !t.recorded:
			return t.notIssued()
		case !time.Now().Before(t.signDeadline):
			// The bootstrapsigner drops the signature of a deleted token.
			return fmt.Errorf("bootstrap token %s of NodePool %s is not usable on %s: it was deleted (a --single-use token is, once a node used it), or the cluster's controller manager did not sign %s/%s with it within %s; %s",
				t.id, t.rec.NodePool, t.c.Name, bootstrap.JoinInfoNamespace, bootstrap.ClusterInfoName, unsignedTokenWait, t.fresh)
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
		var err error
		if clusterInfo, err = readConfigMap(ctx, t.hc, t.c.Server, bootstrap.ClusterInfoName); err != nil {
			return err
		}
	}
}

// authenticate sends the token (a SelfSubjectReview) and returns the
// NodePool its group names.
func (t *tokenCheck) authenticate(ctx context.Context) (string, error) {
	for {
		groups, status, err := selfSubjectGroups(ctx, t.hc, t.c.Server, t.c.Token)
		switch {
		case err != nil:
			return "", err
		case status == http.StatusUnauthorized && time.Now().Before(t.deadline):
			if err := sleep(ctx, 250*time.Millisecond); err != nil {
				return "", err
			}
			continue
		case status == http.StatusUnauthorized:
			return "", t.wrongSecret()
		case status != http.StatusCreated && status != http.StatusOK:
			return "", fmt.Errorf("checking the bootstrap token with %s: HTTP %d", t.c.Server, status)
		}
		for _, g := range groups {
			if pool, ok := strings.CutPrefix(g, bootstrap.PoolGroup("")); ok && pool != "" {
				return pool, nil
			}
		}
		return "", fmt.Errorf("bootstrap token %s belongs to no NodePool of %s (it was not made by hypershift); %s", t.id, t.c.Name, t.fresh)
	}
}

// validSignature checks cluster-info's detached JWS for a token: HS256
// over the kubeconfig, keyed by the token's secret (kubeadm's token
// discovery).
func validSignature(sig, kubeconfig, tokenID, tokenSecret string) bool {
	want, err := jws.ComputeDetachedSignature(kubeconfig, tokenID, tokenSecret)
	return err == nil && hmac.Equal([]byte(sig), []byte(want))
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func clusterName(namespaced string) string {
	if _, name, ok := strings.Cut(namespaced, "/"); ok {
		return name
	}
	return namespaced
}

// unreachableRetry is how long a read of the join information is tried
// again while the API server cannot be reached or does not answer: a
// machine may boot while its control plane is busy or restarting, as
// kubeadm's discovery retries.
var unreachableRetry = time.Minute

// unreachable: err says the server did not answer (yet) — refused, reset,
// closed or timed out — not that it answered wrongly (a certificate that
// does not verify is never tried again).
func unreachable(err error) bool {
	var netErr net.Error
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// readConfigMap reads one of the ConfigMaps of kube-public that anonymous
// users may read.
func readConfigMap(ctx context.Context, hc *http.Client, server, name string) (map[string]string, error) {
	u := strings.TrimSuffix(server, "/") + "/api/v1/namespaces/" + bootstrap.JoinInfoNamespace + "/configmaps/" + name
	var resp *http.Response
	deadline := time.Now().Add(unreachableRetry)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		if resp, err = hc.Do(req); err == nil {
			break
		}
		if !unreachable(err) {
			return nil, fmt.Errorf("cannot reach the API server at %s: %w", server, err)
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return nil, fmt.Errorf("cannot reach the API server at %s (tried for %s): %w", server, unreachableRetry, err)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusForbidden, http.StatusUnauthorized:
		return nil, fmt.Errorf("%s has no hypershift join information %s/%s (HTTP %d): is it the API server of a hosted cluster with a NodePool?", server, bootstrap.JoinInfoNamespace, name, resp.StatusCode)
	default:
		return nil, fmt.Errorf("reading %s/%s from %s: HTTP %d", bootstrap.JoinInfoNamespace, name, server, resp.StatusCode)
	}
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(body, cm); err != nil {
		return nil, fmt.Errorf("%s/%s of %s: %w", bootstrap.JoinInfoNamespace, name, server, err)
	}
	return cm.Data, nil
}

func selfSubjectGroups(ctx context.Context, hc *http.Client, server, token string) ([]string, int, error) {
	review, err := json.Marshal(authenticationv1.SelfSubjectReview{})
	if err != nil {
		return nil, 0, err
	}
	u := strings.TrimSuffix(server, "/") + "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(review))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot reach the API server at %s: %w", server, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	out := &authenticationv1.SelfSubjectReview{}
	if err := json.Unmarshal(body, out); err != nil {
		return nil, 0, fmt.Errorf("self subject review: %w", err)
	}
	return out.Status.UserInfo.Groups, resp.StatusCode, nil
}

func insecureClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: true, //nolint:gosec // only a certificate matching the pinned hash is taken from what is read
		}},
	}
}

// pinnedClient trusts one certificate: the pinned CA, not its bundle.
func pinnedClient(ca *x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}},
	}
}
