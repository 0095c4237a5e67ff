package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
)

// maxNodesRead bounds the nodes read to choose an address.
const maxNodesRead = 500

// defaultPublishing chooses how the API server is published when
// --api-server-publishing is not given: HostPort on a management plane of
// `up` (the flag's default); on a management cluster of `hypershift
// install` (the kube runtime), a NodePort at the InternalIP of its first
// Ready node by name, said on out. When no node can be chosen it refuses
// with the flags that say it, before anything is created.
func (o *createClusterOptions) defaultPublishing(ctx context.Context, c client.Client, out io.Writer) error {
	rt, err := install.InstalledRuntime(ctx, c)
	if err != nil || rt != install.RuntimeKube {
		return nil //nolint:nilerr // unknown: HostPort stays, and the runtime's admission policy names the fix
	}
	fix := "give --api-server-publishing NodePort --api-server-address NODE_ADDRESS, or --api-server-publishing LoadBalancer --api-server-address DNS_NAME"
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.Limit(maxNodesRead)); err != nil {
		return fmt.Errorf("the management cluster runs control planes as pods, published through Services, and its nodes cannot be read to choose an address (%w): %s", err, fix)
	}
	name, addr := readyNodeAddress(nodes.Items)
	if addr == "" {
		return fmt.Errorf("the management cluster runs control planes as pods, published through Services, and has no Ready node with an InternalIP to publish a NodePort on: %s", fix)
	}
	o.publishing, o.apiServerAddress = string(hypershiftv1alpha1.NodePort), addr
	fmt.Fprintf(out, "publishing the API server on a NodePort at node %s's address %s (the management cluster runs control planes as pods); choose with --api-server-publishing and --api-server-address\n", name, addr)
	return nil
}

// readyNodeAddress is the first Ready node by name that has an InternalIP,
// and that address.
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
