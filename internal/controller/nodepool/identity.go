package nodepool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"hypershift.dev/internal/nodes/bootstrap"
)

// Which pool a Node is in is decided here, from what the control plane
// issued — never from the Node's own labels, which its kubelet may set:
//
//  1. A node's first client certificate is approved only by this
//     controller (the hosted controller manager no longer approves
//     bootstrap CSRs), and only when the CSR comes from a live bootstrap
//     token of the pool named in its groups, for a node name no other pool
//     holds (approveClientCSRs).
//  2. The approved CSR — its requester groups are immutable and only
//     holders of the approve permission can approve it — is the record
//     until the Node registers. Then the Node gets bootstrap.BindingLabel,
//     which NodeRestriction forbids kubelets to set or change (bindNodes).
//  3. Everything else — counts, labels and taints, serving certificates,
//     drain, scale-down, autoscaling — looks only at bound Nodes
//     (hostedCluster.poolNodes).
//  4. A bound Node's addresses are recorded the first time it is seen with
//     some, in labels NodeRestriction protects too, leaving out those
//     another Node recorded first (recordAddresses); its serving
//     certificates are approved against that record only.

// Cache indexes of the hosted cluster's connection.
const (
	// boundPoolIndex indexes Nodes by the pool they are bound to.
	boundPoolIndex = "boundPool"
	// csrNodeIndex and csrPoolIndex index node client CSRs by the node
	// name they ask for and the pool of the token that asked.
	csrNodeIndex = "node"
	csrPoolIndex = "pool"
)

// Reasons of the controller's CSR denials.
const (
	reasonInvalidRequest = "HypershiftNodePoolInvalidRequest"
	reasonTokenRejected  = "HypershiftNodePoolTokenRejected"
	reasonNameTaken      = "HypershiftNodePoolNodeNameTaken"
)

func indexBoundPool(obj any) ([]string, error) {
	if n, ok := obj.(*corev1.Node); ok {
		if pool := n.Labels[bootstrap.BindingLabel]; pool != "" {
			return []string{pool}, nil
		}
	}
	return nil, nil
}

func indexCSRNode(obj any) ([]string, error) {
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		if req, err := bootstrap.CheckNodeClientCSR(csr); err == nil {
			return []string{req.Node}, nil
		}
	}
	return nil, nil
}

func indexCSRPool(obj any) ([]string, error) {
	if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
		if pool, ok := bootstrap.PoolOfGroups(csr.Spec.Groups); ok {
			return []string{pool}, nil
		}
	}
	return nil, nil
}

// csrsBy lists cached node client CSRs by index value.
func (hc *hostedCluster) csrsBy(index, value string) []*certificatesv1.CertificateSigningRequest {
	objs, err := hc.clientCSRs.ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*certificatesv1.CertificateSigningRequest, 0, len(objs))
	for _, obj := range objs {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			out = append(out, csr)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) {
			return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// claim is a node name a pool was granted by an approved CSR.
type claim struct {
	pool     string
	csr      *certificatesv1.CertificateSigningRequest
	approved time.Time
}

// latestClaim is the newest approved claim on a node name, if any. The
// approved CSR is garbage-collected by the controller manager an hour after
// approval; a node registers seconds after its certificate is issued.
func (hc *hostedCluster) latestClaim(node string) (claim, bool) {
	var best claim
	found := false
	for _, csr := range hc.csrsBy(csrNodeIndex, node) {
		req, approved, ok := bootstrap.ApprovedBinding(csr)
		if !ok || req.Node != node {
			continue
		}
		if !found || approved.After(best.approved) ||
			(approved.Equal(best.approved) && best.csr.CreationTimestamp.Before(&csr.CreationTimestamp)) {
			best, found = claim{pool: req.Pool, csr: csr, approved: approved}, true
		}
	}
	return best, found
}

// claimants are the pools whose approved CSRs name an unbound node.
func (hc *hostedCluster) claimants(node string) []string {
	if c, ok := hc.latestClaim(node); ok {
		return []string{c.pool}
	}
	return nil
}

// approveClientCSRs approves the pending node client CSRs made with the
// pool's bootstrap tokens that pass every check, and denies the others
// with the reason. A single-use token is deleted once one CSR made with it
// is approved.
func (r *Reconciler) approveClientCSRs(ctx context.Context, s *scope) error {
	// Two pools must not be granted one name at once.
	s.hosted.grantMu.Lock()
	defer s.hosted.grantMu.Unlock()
	for name, c := range s.hosted.granted {
		if time.Since(c.approved) >= grantMemory {
			delete(s.hosted.granted, name)
		}
	}
	tokens := map[string]*corev1.Secret{} // read once per reconcile; nil: gone
	if err := deleteUsedSingleUseTokens(ctx, s); err != nil {
		return err
	}
	for _, csr := range s.hosted.csrsBy(csrPoolIndex, s.np.Name) {
		if !bootstrap.Pending(csr) {
			continue
		}
		req, secret, reason, err := r.checkClientCSR(ctx, s, csr, tokens)
		if reason != "" {
			s.log.Info("denying node client CSR", "csr", csr.Name, "reason", err.Error())
			if err := bootstrap.Deny(ctx, s.hosted.kube, csr, reason, err.Error()); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if err := bootstrap.Approve(ctx, s.hosted.kube, csr, bootstrap.ClientApprovalReason,
			fmt.Sprintf("Node %s joins NodePool %s with bootstrap token %s", req.Node, req.Pool, req.TokenID)); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		s.hosted.granted[req.Node] = claim{pool: req.Pool, csr: csr, approved: time.Now()}
		s.log.Info("node client CSR approved", "csr", csr.Name, "node", req.Node, "tokenID", req.TokenID)
		if bootstrap.SingleUse(secret) {
			if err := deleteUsedToken(ctx, s, secret); err != nil {
				return err
			}
			tokens[req.TokenID] = nil
			s.log.Info("single-use bootstrap token used, deleted", "tokenID", req.TokenID, "node", req.Node)
		}
	}
	return nil
}

// deleteUsedSingleUseTokens deletes the pool's single-use tokens that an
// approved CSR already used, should their deletion after the approval have
// failed.
func deleteUsedSingleUseTokens(ctx context.Context, s *scope) error {
	for _, csr := range s.hosted.csrsBy(csrPoolIndex, s.np.Name) {
		req, _, ok := bootstrap.ApprovedBinding(csr)
		if !ok {
			continue
		}
		secret, err := s.hosted.secrets.Get(bootstrap.SecretPrefix + req.TokenID)
		if err != nil || !bootstrap.SingleUse(secret) {
			continue
		}
		if err := deleteUsedToken(ctx, s, secret); err != nil {
			return err
		}
	}
	return nil
}

// deleteUsedToken deletes a token Secret (this one, not a namesake).
func deleteUsedToken(ctx context.Context, s *scope, secret *corev1.Secret) error {
	uid := secret.UID
	err := s.hosted.kube.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete single-use bootstrap token %s: %w", secret.Name, err)
	}
	return nil
}

// checkClientCSR checks a pending node client CSR of the pool. A non-empty
// reason means deny it, for err; an error without a reason is a failure to
// check (retried).
func (r *Reconciler) checkClientCSR(ctx context.Context, s *scope, csr *certificatesv1.CertificateSigningRequest, tokens map[string]*corev1.Secret) (bootstrap.NodeClientRequest, *corev1.Secret, string, error) {
	req, err := bootstrap.CheckNodeClientCSR(csr)
	if err != nil {
		return req, nil, reasonInvalidRequest, err
	}
	// Read the token from the API, not the cache: a single-use token
	// deleted a moment ago must not admit a second node.
	secret, known := tokens[req.TokenID]
	if !known {
		name := bootstrap.SecretPrefix + req.TokenID
		secret, err = s.hosted.kube.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			secret = nil
		case err != nil:
			return req, nil, "", fmt.Errorf("read bootstrap token %s: %w", req.TokenID, err)
		}
		tokens[req.TokenID] = secret
	}
	if secret == nil {
		return req, nil, reasonTokenRejected, fmt.Errorf("bootstrap token %s no longer exists (expired, revoked, or a single-use token already used)", req.TokenID)
	}
	if err := bootstrap.CheckPoolToken(secret, s.np.Name, r.now()); err != nil {
		return req, secret, reasonTokenRejected, err
	}
	if reason, err := s.nameFree(req.Node, csr); err != nil {
		return req, secret, reason, err
	}
	return req, secret, "", nil
}

// nameFree says why the pool may not take a node name: a Node of that name
// exists and is not bound to the pool, another pool was granted the name
// and its node has not registered yet, or — for Simulated pools, whose
// machines the controller names — the name is not one of the pool's
// machines.
func (s *scope) nameFree(node string, csr *certificatesv1.CertificateSigningRequest) (string, error) {
	pool := s.np.Name
	if existing, err := s.hosted.nodes.Get(node); err == nil {
		bound := existing.Labels[bootstrap.BindingLabel]
		if bound != pool {
			if bound == "" {
				bound = "no NodePool"
			} else {
				bound = "NodePool " + bound
			}
			return reasonNameTaken, fmt.Errorf("node %s already exists and belongs to %s: delete the Node before a node of NodePool %s may take its name", node, bound, pool)
		}
	} else {
		for _, c := range s.claims(node) {
			if c.pool != pool && c.csr.UID != csr.UID {
				return reasonNameTaken, fmt.Errorf("node name %s was granted to NodePool %s at %s and its node has not registered yet", node, c.pool, c.approved.UTC().Format(time.RFC3339))
			}
		}
	}
	admitted, err := s.platform.admitsNodeName(s, node)
	if err != nil {
		return "", err
	}
	if !admitted {
		return reasonInvalidRequest, fmt.Errorf("node %s is not a machine of %s NodePool %s", node, s.np.Spec.Platform.Type, pool)
	}
	return "", nil
}

// claims are the grants of a node name the CSR cache shows and those made
// over this connection within grantMemory (the cache may lag them).
func (s *scope) claims(node string) []claim {
	var out []claim
	if c, ok := s.hosted.latestClaim(node); ok {
		out = append(out, c)
	}
	if c, ok := s.hosted.granted[node]; ok && time.Since(c.approved) < grantMemory {
		out = append(out, c)
	}
	return out
}

// grantMemory is how long an approval made over this connection is
// remembered: as long as the controller manager keeps approved CSRs.
const grantMemory = time.Hour

// bindNodes gives the pool's newly registered Nodes their binding label:
// those whose newest approved client CSR is the pool's and that registered
// after that CSR was made. A Node created before its CSR cannot be the
// result of it.
func (r *Reconciler) bindNodes(ctx context.Context, s *scope) error {
	seen := map[string]bool{}
	for _, csr := range s.hosted.csrsBy(csrPoolIndex, s.np.Name) {
		req, _, ok := bootstrap.ApprovedBinding(csr)
		if !ok || seen[req.Node] {
			continue
		}
		seen[req.Node] = true
		node, err := s.hosted.nodes.Get(req.Node)
		if err != nil || node.Labels[bootstrap.BindingLabel] != "" {
			continue
		}
		c, ok := s.hosted.latestClaim(req.Node)
		if !ok || c.pool != s.np.Name || node.CreationTimestamp.Before(&c.csr.CreationTimestamp) {
			continue
		}
		bound, err := labelNodeAsSeen(ctx, s, node, map[string]string{bootstrap.BindingLabel: s.np.Name})
		if err != nil {
			return fmt.Errorf("bind node %s to NodePool %s: %w", node.Name, s.np.Name, err)
		}
		if bound == nil {
			continue
		}
		s.log.Info("node bound to its NodePool", "node", node.Name, "csr", c.csr.Name)
		s.nodes[node.Name] = bound
	}
	return nil
}

// labelNodeAsSeen adds labels to node only if it is still the version the
// decision was made on (its resourceVersion): a Node changed or deleted
// since returns nil, and the pool is looked at again in a second.
func labelNodeAsSeen(ctx context.Context, s *scope, node *corev1.Node, labels map[string]string) (*corev1.Node, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":          labels,
		"resourceVersion": node.ResourceVersion,
	}})
	if err != nil {
		return nil, err
	}
	patched, err := s.hosted.kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		s.requeueBy(time.Second)
		return nil, nil
	}
	return patched, err
}

// recordAddresses records the addresses of the pool's bound Nodes that
// have none recorded yet (bootstrap.AddressRecord): those their status
// reports when first seen, less those another Node of the cluster holds.
func (r *Reconciler) recordAddresses(ctx context.Context, s *scope) error {
	var taken map[string]string
	for _, node := range s.nodes {
		if _, done := bootstrap.RecordedAddresses(node); done || len(node.Status.Addresses) == 0 {
			continue
		}
		if taken == nil {
			all, err := s.hosted.nodes.List(labels.Everything())
			if err != nil {
				return err
			}
			taken = bootstrap.RecordedBy(all)
		}
		record, refused := bootstrap.AddressRecord(node, taken)
		recorded, err := labelNodeAsSeen(ctx, s, node, record)
		if err != nil {
			return fmt.Errorf("record the addresses of node %s: %w", node.Name, err)
		}
		if recorded == nil {
			continue
		}
		addrs, _ := bootstrap.RecordedAddresses(recorded)
		for _, a := range addrs {
			taken[a] = node.Name
		}
		if len(refused) > 0 {
			s.log.Info("node addresses not recorded: another node holds them, or more than the record keeps",
				"node", node.Name, "recorded", addrs, "refused", refused)
		} else {
			s.log.Info("node addresses recorded", "node", node.Name, "addresses", addrs)
		}
		s.nodes[node.Name] = recorded
	}
	return nil
}
