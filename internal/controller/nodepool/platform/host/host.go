// Package host is the Host platform: a pool's machines are machines of the
// management plane's host (network namespaces, docs/machines.md), made by
// Cluster API (platform/clusterapi) with the HostMachine infrastructure
// provider (internal/controller/hostmachine).
package host

import (
	"context"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
)

// Infrastructure is the HostMachine provider's part of a pool.
var Infrastructure = clusterapi.Infrastructure{
	Group:               hypershiftv1alpha1.GroupVersion.Group,
	Version:             hypershiftv1alpha1.GroupVersion.Version,
	ClusterKind:         "HostCluster",
	MachineKind:         "HostMachine",
	MachineTemplateKind: "HostMachineTemplate",
	NodeName:            NodeName,
}

// NodeName is the Node name of a machine of this provider ID: the
// machine's hostname; "" for another provider's ID.
func NodeName(providerID string) string {
	name, ok := strings.CutPrefix(providerID, hypershiftv1alpha1.HostProviderIDPrefix)
	if !ok {
		return ""
	}
	return name
}

// New is the Host platform of the management cluster c; start runs
// Cluster API's controllers (nil: this operator runs none).
func New(c client.Client, start func(context.Context) error) *clusterapi.Platform {
	return &clusterapi.Platform{Type: hypershiftv1alpha1.HostPlatform, Client: c, Infra: Infrastructure, Start: start}
}
