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
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"

	"hypershift.dev/internal/nodes/bootstrap"
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
	// CAPEM verifies the API server; ClientCAPEM the API server's calls to
	// the kubelet.
	CAPEM, ClientCAPEM []byte
	// NodePool is the pool the token was issued for.
	NodePool string
	Token    string
}

// Discover checks a join command against the cluster it names, before
// anything is written: the API server must present the pinned CA, and the
// token must authenticate. Errors say which part is wrong.
func Discover(ctx context.Context, server, token, caHash string) (*Cluster, error) {
	m := tokenPattern.FindStringSubmatch(token)
	if m == nil {
		return nil, errors.New("--token must be ID.SECRET (6 and 16 characters of a-z0-9), as printed by `hypershift create join-command`")
	}
	tokenID := m[1]
	if !caHashPattern.MatchString(caHash) {
		return nil, errors.New("--ca-cert-hash must be sha256:<64 hex digits>, as printed by `hypershift create join-command`")
	}
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--server must be an https URL of the hosted API server, got %q", server)
	}

	// The first read trusts nobody; its CA counts only if it hashes to the
	// pinned value, and the second read proves the server holds that CA's
	// certificate.
	info, err := readJoinInfo(ctx, insecureClient(), server)
	if err != nil {
		return nil, err
	}
	caPEM := []byte(info[bootstrap.JoinInfoCA])
	got, err := bootstrap.CAHash(caPEM)
	if err != nil {
		return nil, fmt.Errorf("join information of %s: %w", server, err)
	}
	if got != caHash {
		return nil, fmt.Errorf("the API server at %s has CA %s, not the --ca-cert-hash %s: the join command is for another cluster (or the connection is intercepted)", server, got, caHash)
	}
	pinned, err := pinnedClient(caPEM)
	if err != nil {
		return nil, err
	}
	if info, err = readJoinInfo(ctx, pinned, server); err != nil {
		return nil, err
	}
	c := &Cluster{
		Name:        info[bootstrap.JoinInfoCluster],
		Server:      server,
		CAPEM:       caPEM,
		ClientCAPEM: []byte(info[bootstrap.JoinInfoClientCA]),
		Token:       token,
	}
	if len(c.ClientCAPEM) == 0 {
		return nil, fmt.Errorf("join information of %s has no client CA yet; try again in a moment", c.Name)
	}
	c.NodePool, err = checkToken(ctx, pinned, c, tokenID, info)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// checkToken authenticates with the token and returns its NodePool. When
// the API server refuses it, the token records of the join information tell
// an expired token from one this cluster never issued.
func checkToken(ctx context.Context, hc *http.Client, c *Cluster, tokenID string, info map[string]string) (string, error) {
	fresh := "print a new join command with `hypershift create join-command --name " + clusterName(c.Name) + "`"
	rec, recorded := bootstrap.LookupToken(info, tokenID)
	if recorded && !time.Now().Before(rec.Expiration) {
		return "", fmt.Errorf("bootstrap token %s of NodePool %s expired at %s: %s",
			tokenID, rec.NodePool, rec.Expiration.UTC().Format(time.RFC3339), fresh)
	}
	// A token made a moment ago may take the API server a moment to learn.
	deadline := time.Now().Add(5 * time.Second)
	for {
		groups, status, err := selfSubjectGroups(ctx, hc, c.Server, c.Token)
		switch {
		case err != nil:
			return "", err
		case status == http.StatusUnauthorized && recorded && time.Now().Before(deadline):
			time.Sleep(250 * time.Millisecond)
			continue
		case status == http.StatusUnauthorized && recorded:
			return "", fmt.Errorf("bootstrap token %s of NodePool %s was refused by %s: its secret part is wrong, or it was deleted; %s", tokenID, rec.NodePool, c.Name, fresh)
		case status == http.StatusUnauthorized:
			return "", fmt.Errorf("bootstrap token %s was not issued by hosted cluster %s: it belongs to another cluster, or it is mistyped or deleted; %s", tokenID, c.Name, fresh)
		case status != http.StatusCreated && status != http.StatusOK:
			return "", fmt.Errorf("checking the bootstrap token with %s: HTTP %d", c.Server, status)
		}
		for _, g := range groups {
			if pool, ok := strings.CutPrefix(g, bootstrap.PoolGroup("")); ok && pool != "" {
				return pool, nil
			}
		}
		return "", fmt.Errorf("bootstrap token %s belongs to no NodePool of %s (it was not made by hypershift); %s", tokenID, c.Name, fresh)
	}
}

func clusterName(namespaced string) string {
	if _, name, ok := strings.Cut(namespaced, "/"); ok {
		return name
	}
	return namespaced
}

func readJoinInfo(ctx context.Context, hc *http.Client, server string) (map[string]string, error) {
	u := strings.TrimSuffix(server, "/") + "/api/v1/namespaces/" + bootstrap.JoinInfoNamespace + "/configmaps/" + bootstrap.JoinInfoName
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the API server at %s: %w", server, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusForbidden, http.StatusUnauthorized:
		return nil, fmt.Errorf("%s has no hypershift join information (HTTP %d): is it the API server of a hosted cluster with a NodePool?", server, resp.StatusCode)
	default:
		return nil, fmt.Errorf("reading join information from %s: HTTP %d", server, resp.StatusCode)
	}
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(body, cm); err != nil {
		return nil, fmt.Errorf("join information of %s: %w", server, err)
	}
	if cm.Data[bootstrap.JoinInfoCA] == "" {
		return nil, fmt.Errorf("join information of %s has no CA", server)
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
			InsecureSkipVerify: true, //nolint:gosec // what is read is trusted only after its CA matches the pinned hash
		}},
	}
}

func pinnedClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("join information holds no usable CA certificate")
	}
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}},
	}, nil
}
