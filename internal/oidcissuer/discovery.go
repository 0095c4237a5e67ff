// Package oidcissuer makes the OpenID discovery documents of a hosted
// cluster's service-account issuer, exactly as its kube-apiserver serves
// them, and publishes them to object storage. Relying parties outside the
// cluster (AWS IAM, Azure AD, go-oidc) fetch
// <issuer>/.well-known/openid-configuration and the key set it names to
// verify the cluster's service-account tokens, and cannot reach the
// apiserver: a bucket served at the issuer URL answers for it.
package oidcissuer

import (
	"crypto"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The documents' paths under the issuer URL (OpenIDConfigPath and
// JWKSPath of k8s.io/kubernetes/pkg/serviceaccount).
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/openid/v1/jwks"
)

// discoveryDoc is the apiserver's openIDMetadata: the provider metadata
// relying parties need to verify ID tokens, fields in its order.
type discoveryDoc struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// Discovery is the discovery document of issuer whose tokens are signed
// with one of pubs, as kube-apiserver serves it (openIDConfigJSON in
// k8s.io/kubernetes/pkg/serviceaccount/openidmetadata.go), with jwks_uri
// the key set published beside it: issuer + JWKSPath.
func Discovery(issuer string, pubs []crypto.PublicKey) ([]byte, error) {
	if err := ValidateIssuerURL(issuer); err != nil {
		return nil, err
	}
	set, err := keySetOf(pubs)
	if err != nil {
		return nil, fmt.Errorf("discovery document of %s: %w", issuer, err)
	}
	var algs []string
	for _, k := range set.Keys {
		algs = append(algs, k.Alg)
	}
	// The apiserver lists the algorithms as a sorted set.
	slices.Sort(algs)
	return json.Marshal(discoveryDoc{
		Issuer:        issuer,
		JWKSURI:       issuer + JWKSPath,
		ResponseTypes: []string{"id_token"}, // Kubernetes only issues ID tokens.
		SubjectTypes:  []string{"public"},
		SigningAlgs:   slices.Compact(algs),
	})
}

// JWKS is the key set of pubs as kube-apiserver serves it at JWKSPath
// (openIDKeysetJSON in k8s.io/kubernetes/pkg/serviceaccount): keys in
// the order given, a key given twice listed once. Keys other than RSA of
// at least 2048 bits and ECDSA on P-256 or P-384 are refused, private
// keys too.
func JWKS(pubs []crypto.PublicKey) ([]byte, error) {
	set, err := keySetOf(pubs)
	if err != nil {
		return nil, fmt.Errorf("key set: %w", err)
	}
	return json.Marshal(set)
}

// ValidateIssuerURL says whether s can be a service-account issuer whose
// documents relying parties fetch: an https URL with a host and no query,
// fragment or user info (OpenID Connect Discovery 1.0, section 3), and no
// trailing slash. Tokens carry the issuer verbatim in their iss claim and
// relying parties compare it as a string with the document's, so
// https://h/x/ is another issuer than https://h/x, and its documents
// would sit under a double slash (https://h/x//.well-known/...).
func ValidateIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("issuer URL %q is not a URL: %w", s, err)
	}
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("issuer URL %q: want https://HOST[/PATH] (relying parties fetch the issuer's documents over https only)", s)
	case u.Host == "":
		return fmt.Errorf("issuer URL %q has no host: want https://HOST[/PATH]", s)
	case u.User != nil:
		// Redacted: the error must not repeat a password.
		return fmt.Errorf("issuer URL %q carries user info: remove %q (the issuer is public; nothing is sent to log in)", u.Redacted(), u.User.Username()+"@")
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("issuer URL %q has a query: remove %q (an issuer may not have one)", s, "?"+u.RawQuery)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("issuer URL %q has a fragment: remove %q (an issuer may not have one)", s, "#"+u.Fragment)
	case strings.HasSuffix(s, "/"):
		return fmt.Errorf("issuer URL %q ends with a slash: use %q (tokens name the issuer verbatim, and its documents are under issuer + %s)", s, strings.TrimRight(s, "/"), DiscoveryPath)
	}
	return nil
}
