package konnectivity

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/apiserver-network-proxy/proto/header"

	"hypershift.dev/internal/nodes/bootstrap"
)

// Bounds on what an agent sends and on the work it causes: agents hold
// this cluster's shared client certificate, so any node can connect as
// often as it likes.
const (
	// reviewTimeout bounds a token review and the Node read after it.
	reviewTimeout = 10 * time.Second
	// concurrentReviews bounds the reviews in flight; more connections
	// wait (within reviewTimeout) for one to end.
	concurrentReviews = 4
	maxTokenBytes     = 16 << 10
	maxIDBytes        = 253
	maxIdentifiers    = 1 << 10
)

// nodeIdentity decides whether an agent may serve the addresses it
// declares. Every node holds the cluster's one agent certificate, so the
// certificate says only "an agent of this cluster"; which node it is
// comes from the token of the agent's pod, bound to the pod and so to its
// node (a kubelet can get tokens only for pods bound to it). The agent
// must use the node's name as its ID, and may declare as identifiers only
// the node's name and the addresses the control plane recorded for the
// Node at join (node-restriction labels its kubelet cannot change,
// bootstrap.RecordedAddresses) — never what the node reports about itself.
// So one node cannot register for another's address and receive the API
// server's tunnelled connections to it (logs, exec, port-forward).
type nodeIdentity struct {
	kube                                kubernetes.Interface
	namespace, serviceAccount, audience string
	slots                               chan struct{}
	// refusals bounds the log lines of refused agents (a node may try as
	// often as it likes); suppressed counts those left out since the last.
	refusals   *rate.Limiter
	suppressed atomic.Int64
}

func newNodeIdentity(kube kubernetes.Interface, namespace, serviceAccount, audience string) *nodeIdentity {
	return &nodeIdentity{
		kube: kube, namespace: namespace, serviceAccount: serviceAccount, audience: audience,
		slots:    make(chan struct{}, concurrentReviews),
		refusals: rate.NewLimiter(rate.Every(time.Second), 10),
	}
}

// intercept checks a stream before upstream's server handles it: the
// agent service's only method is Connect, the agent's tunnel.
func (n *nodeIdentity) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	node, err := n.verify(ss.Context())
	if err != nil {
		if n.refusals.Allow() {
			klog.InfoS("Refused an agent", "method", info.FullMethod, "reason", err.Error(), "refusalsNotLogged", n.suppressed.Swap(0))
		} else {
			n.suppressed.Add(1)
		}
		return status.Error(codes.PermissionDenied, err.Error())
	}
	klog.V(2).InfoS("Agent identified", "node", node)
	return handler(srv, ss)
}

// verify returns the node an agent's connection is from, or why it is
// refused.
func (n *nodeIdentity) verify(ctx context.Context) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	agentID, err := one(md, header.AgentID, maxIDBytes)
	if err != nil {
		return "", err
	}
	token, err := one(md, header.AuthenticationTokenContextKey, maxTokenBytes)
	if err != nil {
		return "", fmt.Errorf("%w: the agent needs --service-account-token-path", err)
	}
	token, ok := strings.CutPrefix(token, header.AuthenticationTokenContextSchemePrefix)
	if !ok {
		return "", fmt.Errorf("the token has no %q prefix", header.AuthenticationTokenContextSchemePrefix)
	}
	idents := md.Get(header.AgentIdentifiers)
	if len(idents) > 1 || (len(idents) == 1 && len(idents[0]) > maxIdentifiers) {
		return "", fmt.Errorf("%s: at most one value of %d bytes", header.AgentIdentifiers, maxIdentifiers)
	}

	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	select {
	case n.slots <- struct{}{}:
		defer func() { <-n.slots }()
	case <-ctx.Done():
		return "", fmt.Errorf("no slot to review the token: %w", ctx.Err())
	}
	nodeName, nodeUID, err := n.review(ctx, token)
	if err != nil {
		return "", err
	}
	if agentID != nodeName {
		return "", fmt.Errorf("agent ID %q is not the name of its node %q", agentID, nodeName)
	}
	node, err := n.kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("node %s: %w", nodeName, err)
	}
	if nodeUID != "" && node.UID != types.UID(nodeUID) {
		return "", fmt.Errorf("node %s is not the one the token was bound to (UID %s, now %s)", nodeName, nodeUID, node.UID)
	}
	recorded, ok := bootstrap.RecordedAddresses(node)
	if !ok {
		return "", fmt.Errorf("node %s: no addresses recorded yet", nodeName)
	}
	if len(idents) == 1 {
		if err := allowed(idents[0], nodeName, recorded); err != nil {
			return "", fmt.Errorf("node %s: %w", nodeName, err)
		}
	}
	return nodeName, nil
}

// review asks the hosted API server whom the token belongs to: it must be
// the agents' ServiceAccount, for the server's audience, bound to a pod
// on a node.
func (n *nodeIdentity) review(ctx context.Context, token string) (nodeName, nodeUID string, err error) {
	r, err := n.kube.AuthenticationV1().TokenReviews().Create(ctx, &authv1.TokenReview{
		Spec: authv1.TokenReviewSpec{Token: token, Audiences: []string{n.audience}},
	}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return "", "", fmt.Errorf("token review: %w", err)
	case !r.Status.Authenticated:
		return "", "", fmt.Errorf("token not authenticated: %s", r.Status.Error)
	case !slices.Contains(r.Status.Audiences, n.audience):
		return "", "", fmt.Errorf("token not for audience %s", n.audience)
	}
	if want := serviceaccount.MakeUsername(n.namespace, n.serviceAccount); r.Status.User.Username != want {
		return "", "", fmt.Errorf("token of %q, not of %s", r.Status.User.Username, want)
	}
	// The claims of a pod-bound token about the pod's node, as the API
	// server puts them in the review's extra.
	names := r.Status.User.Extra[serviceaccount.NodeNameKey]
	if len(names) != 1 || names[0] == "" {
		return "", "", errors.New("the token is not bound to a pod on a node")
	}
	if uids := r.Status.User.Extra[serviceaccount.NodeUIDKey]; len(uids) == 1 {
		nodeUID = uids[0]
	}
	return names[0], nodeUID, nil
}

// allowed checks the agent's identifiers (url-encoded, as upstream's
// --agent-identifiers): IP addresses recorded for the node, and the
// node's own name. Every other kind (a CIDR, the default route) would
// route traffic meant for other nodes or the cluster, and is refused.
func allowed(identifiers, nodeName string, recorded []string) error {
	values, err := url.ParseQuery(identifiers)
	if err != nil {
		return fmt.Errorf("identifiers: %w", err)
	}
	for kind, ids := range values {
		for _, id := range ids {
			switch header.IdentifierType(kind) {
			case header.IPv4, header.IPv6:
				addr, err := netip.ParseAddr(id)
				if err != nil || !slices.ContainsFunc(recorded, func(r string) bool {
					ra, err := netip.ParseAddr(r)
					return err == nil && ra == addr
				}) {
					return fmt.Errorf("identifier %s=%s is not an address recorded for the node (%s)", kind, id, strings.Join(recorded, ", "))
				}
			case header.Host:
				if id != nodeName {
					return fmt.Errorf("identifier host=%s is not the node's name", id)
				}
			default:
				return fmt.Errorf("identifier kind %q is not accepted", kind)
			}
		}
	}
	return nil
}

// one is the single value of key in md, at most limit bytes.
func one(md metadata.MD, key string, limit int) (string, error) {
	v := md.Get(key)
	switch {
	case len(v) != 1:
		return "", fmt.Errorf("expected one %s, got %d", key, len(v))
	case len(v[0]) > limit:
		return "", fmt.Errorf("%s longer than %d bytes", key, limit)
	}
	return v[0], nil
}
