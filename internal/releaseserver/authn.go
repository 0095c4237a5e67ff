package releaseserver

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// Groups a node's credentials carry: a kubelet's client certificate has
// O=system:nodes; a bootstrap token maps to system:bootstrappers (and
// system:bootstrappers:hypershift:<pool>).
const (
	GroupNodes         = "system:nodes"
	GroupBootstrappers = "system:bootstrappers"
)

// errUnauthenticated: no credential, or one the cluster does not know
// (another cluster's CA or token). errForbidden: a credential of the
// cluster that is not a node's.
var (
	errUnauthenticated = errors.New("unauthenticated")
	errForbidden       = errors.New("forbidden")
)

// TokenReviewer maps a bearer token to its user's groups through the
// hosted API server; ok is false when the API server does not know it.
type TokenReviewer func(ctx context.Context, token string) (user string, groups []string, ok bool, err error)

// Authenticator decides who may fetch a release: a node of this cluster.
type Authenticator struct {
	// ClientCAs verifies client certificates (the API server's
	// --client-ca-file content).
	ClientCAs *x509.CertPool
	// Review maps bearer tokens; nil: tokens are refused.
	Review TokenReviewer
}

// Authenticate returns the requester's name, errUnauthenticated (401) or
// errForbidden (403). A client certificate is taken only when it verifies
// against ClientCAs for client auth; it must carry O=system:nodes. A
// bearer token must map to a user in system:bootstrappers or
// system:nodes.
func (a *Authenticator) Authenticate(r *http.Request) (string, error) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		certs := r.TLS.PeerCertificates
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		_, err := certs[0].Verify(x509.VerifyOptions{
			Roots: a.ClientCAs, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			return "", fmt.Errorf("%w: client certificate %q: %w", errUnauthenticated, certs[0].Subject.CommonName, err)
		}
		if !slices.Contains(certs[0].Subject.Organization, GroupNodes) {
			return "", fmt.Errorf("%w: %s is not in %s", errForbidden, certs[0].Subject.CommonName, GroupNodes)
		}
		return certs[0].Subject.CommonName, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" || a.Review == nil {
		return "", fmt.Errorf("%w: no client certificate or bearer token", errUnauthenticated)
	}
	user, groups, known, err := a.Review(r.Context(), token)
	if err != nil {
		return "", err
	}
	if !known {
		return "", fmt.Errorf("%w: the API server does not know the token", errUnauthenticated)
	}
	if !slices.Contains(groups, GroupBootstrappers) && !slices.Contains(groups, GroupNodes) {
		return "", fmt.Errorf("%w: %s is in neither %s nor %s", errForbidden, user, GroupBootstrappers, GroupNodes)
	}
	return user, nil
}

// SelfSubjectReviewer reviews tokens by sending each, as its own bearer
// token, in a SelfSubjectReview to the API server at server: no privilege
// is needed, and the API server's authenticators (bootstrap tokens, service
// accounts) decide.
func SelfSubjectReviewer(server string, client *http.Client) TokenReviewer {
	return func(ctx context.Context, token string) (string, []string, bool, error) {
		body, err := json.Marshal(authenticationv1.SelfSubjectReview{
			TypeMeta: metaSelfSubjectReview,
		})
		if err != nil {
			return "", nil, false, err
		}
		u := strings.TrimSuffix(server, "/") + "/apis/authentication.k8s.io/v1/selfsubjectreviews"
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return "", nil, false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return "", nil, false, fmt.Errorf("review the token with the API server %s: %w", server, err)
		}
		defer func() { _ = resp.Body.Close() }()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		switch resp.StatusCode {
		case http.StatusOK, http.StatusCreated:
		case http.StatusUnauthorized:
			return "", nil, false, nil
		default:
			return "", nil, false, fmt.Errorf("review the token with the API server %s: %s: %s", server, resp.Status, bytes.TrimSpace(data))
		}
		out := &authenticationv1.SelfSubjectReview{}
		if err := json.Unmarshal(data, out); err != nil {
			return "", nil, false, fmt.Errorf("self subject review: %w", err)
		}
		return out.Status.UserInfo.Username, out.Status.UserInfo.Groups, true, nil
	}
}
