package bootstrap

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

// Node identity. A Node belongs to the NodePool whose bootstrap token got
// its client certificate, not to the pool its kubelet says it belongs to:
// the NodePool controller approves node client CSRs itself and records the
// pool in BindingLabel, a label the NodeRestriction admission plugin
// forbids kubelets to set or change.
const (
	// BindingLabel names the NodePool a Node was admitted to.
	BindingLabel = "node-restriction.kubernetes.io/hypershift-nodepool"
	// ClientApprovalReason is the reason of the controller's approval of a
	// node client CSR; an approval with another reason binds nothing.
	ClientApprovalReason = "HypershiftNodePoolBootstrap"
	// BootstrapUserPrefix starts a bootstrap token's user name:
	// system:bootstrap:<token id>.
	BootstrapUserPrefix = "system:bootstrap:"
)

// NodeClientRequest is what a node client CSR asks for, once checked.
type NodeClientRequest struct {
	// Node is the node name the certificate is for.
	Node string
	// Pool is the NodePool of the token that asked.
	Pool string
	// TokenID is the ID of that bootstrap token.
	TokenID string
}

// PoolOfGroups returns the NodePool a requester's groups name through
// PoolGroup; ok is false when they name none, or more than one.
func PoolOfGroups(groups []string) (pool string, ok bool) {
	prefix := PoolGroup("")
	for _, g := range groups {
		if p, found := strings.CutPrefix(g, prefix); found && p != "" {
			if pool != "" {
				return "", false
			}
			pool = p
		}
	}
	return pool, pool != ""
}

// CheckNodeClientCSR returns what a node client CSR asks for when it is a
// request a NodePool's bootstrap token may make: for the
// kube-apiserver-client-kubelet signer, made by system:bootstrap:<id> in
// system:bootstrappers and exactly one pool group, for
// CN=system:node:<name>, O=system:nodes, with client usages only and no
// subject alternative names.
func CheckNodeClientCSR(csr *certificatesv1.CertificateSigningRequest) (NodeClientRequest, error) {
	var out NodeClientRequest
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		return out, fmt.Errorf("signer is %q, not %s", csr.Spec.SignerName, certificatesv1.KubeAPIServerClientKubeletSignerName)
	}
	id, ok := strings.CutPrefix(csr.Spec.Username, BootstrapUserPrefix)
	if !ok || id == "" {
		return out, fmt.Errorf("requested by %q, not by a bootstrap token (%s<id>)", csr.Spec.Username, BootstrapUserPrefix)
	}
	if !slices.Contains(csr.Spec.Groups, BootstrappersGroup) {
		return out, fmt.Errorf("requester is not in group %s", BootstrappersGroup)
	}
	pool, ok := PoolOfGroups(csr.Spec.Groups)
	if !ok {
		return out, fmt.Errorf("requester's groups %q name no single NodePool (%s<pool>)", csr.Spec.Groups, PoolGroup(""))
	}
	for _, u := range csr.Spec.Usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth:
		default:
			return out, fmt.Errorf("usage %q is not allowed for a node client certificate", u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return out, errors.New("usage \"client auth\" is missing")
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return out, err
	}
	node, ok := strings.CutPrefix(req.Subject.CommonName, NodeUserPrefix)
	if !ok || node == "" {
		return out, fmt.Errorf("subject CN is %q, not %s<node name>", req.Subject.CommonName, NodeUserPrefix)
	}
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != NodesGroup {
		return out, fmt.Errorf("subject O is %q, not [%s]", req.Subject.Organization, NodesGroup)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return out, errors.New("a node client certificate has no subject alternative names")
	}
	return NodeClientRequest{Node: node, Pool: pool, TokenID: id}, nil
}

// CheckPoolToken returns nil when secret is a bootstrap token that may
// still authenticate and that makes its holder a bootstrapper of pool.
func CheckPoolToken(secret *corev1.Secret, pool string, now time.Time) error {
	tok, ok := tokenFromSecret(secret)
	if !ok {
		return fmt.Errorf("secret %s/%s is not a bootstrap token", secret.Namespace, secret.Name)
	}
	if !now.Before(tok.Expiration) {
		return fmt.Errorf("token %s expired at %s", tok.ID, tok.Expiration.Format(time.RFC3339))
	}
	if string(secret.Data[keyUsageAuth]) != "true" {
		return fmt.Errorf("token %s may not authenticate (%s is not true)", tok.ID, keyUsageAuth)
	}
	if !slices.Contains(strings.Split(string(secret.Data[keyExtraGroups]), ","), PoolGroup(pool)) {
		return fmt.Errorf("token %s is not a token of NodePool %s (%s lacks %s)", tok.ID, pool, keyExtraGroups, PoolGroup(pool))
	}
	return nil
}

// SingleUse reports whether a token Secret may admit one node only.
func SingleUse(secret *corev1.Secret) bool { return secret.Labels[SingleUseLabel] == "true" }

// ApprovedBinding returns the node and NodePool a client CSR binds: one the
// NodePool controller approved (ClientApprovalReason) after
// CheckNodeClientCSR passed, and when it did. ok is false for any other CSR.
func ApprovedBinding(csr *certificatesv1.CertificateSigningRequest) (req NodeClientRequest, approved time.Time, ok bool) {
	found := false
	for _, c := range csr.Status.Conditions {
		switch {
		case c.Type == certificatesv1.CertificateDenied, c.Type == certificatesv1.CertificateFailed:
			return req, approved, false
		case c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue && c.Reason == ClientApprovalReason:
			found, approved = true, c.LastUpdateTime.Time
		}
	}
	if !found {
		return req, approved, false
	}
	req, err := CheckNodeClientCSR(csr)
	return req, approved, err == nil
}
