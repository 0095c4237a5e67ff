package install

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// maxNodesRead bounds the nodes read to choose an address.
const maxNodesRead = 500

// NodePortChoice is where a hosted API server is published when the user
// did not say: a NodePort at a node's address.
type NodePortChoice struct {
	Publishing hypershiftv1alpha1.PublishingStrategyType
	Address    string
	// Node is the node whose address it is.
	Node string
}

// DefaultPublishing chooses how a hosted API server is published when the
// user did not say: nil (HostPort, the default) on a management plane of
// `up` or one whose runtime is not known; on a management cluster of
// `hypershift install` (the kube runtime), a NodePort at the InternalIP of
// its first Ready, schedulable node by name. When no node can be chosen it
// refuses naming the flags that say it (fix), before anything is created.
func DefaultPublishing(ctx context.Context, c client.Reader, fix string) (*NodePortChoice, error) {
	rt, err := InstalledRuntime(ctx, c)
	if err != nil || rt != RuntimeKube {
		return nil, nil //nolint:nilerr // unknown: HostPort stays, and the runtime's admission policy names the fix
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.Limit(maxNodesRead)); err != nil {
		return nil, fmt.Errorf("the management cluster runs control planes as pods, published through Services, and its nodes cannot be read to choose an address (%w): %s", err, fix)
	}
	name, addr := readyNodeAddress(nodes.Items)
	if addr == "" {
		return nil, fmt.Errorf("the management cluster runs control planes as pods, published through Services, and has no Ready node with an InternalIP to publish a NodePort on: %s", fix)
	}
	return &NodePortChoice{Publishing: hypershiftv1alpha1.NodePort, Address: addr, Node: name}, nil
}

// readyNodeAddress is the first Ready, schedulable node by name that has an
// InternalIP, and that address.
func readyNodeAddress(nodes []corev1.Node) (name, addr string) {
	slices.SortFunc(nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range nodes {
		ready := slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		})
		if !ready || n.Spec.Unschedulable {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP && a.Address != "" {
				return n.Name, a.Address
			}
		}
	}
	return "", ""
}
