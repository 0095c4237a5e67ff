// Package dataplane renders the objects a hosted control plane keeps in its
// hosted cluster — cluster DNS, the Konnectivity agent, the endpoints of
// the `kubernetes` Service and the RBAC they need — and reads their health
// back. Render is pure: the HostedControlPlane controller applies what it
// returns with server-side apply and hands what the API server returned to
// Health.
package dataplane

import (
	"fmt"
	"net/netip"

	"hypershift.dev/internal/clusternet"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and names every part of the data plane uses.
const (
	// ManagedByLabel marks every object the control plane applies; its
	// value is ManagedBy. The controller watches objects by this label.
	ManagedByLabel = "hypershift.dev/managed-by"
	ManagedBy      = "control-plane"
	// FieldManager is the server-side apply field manager of the objects.
	FieldManager = "hypershift.dev/hosted-cluster-config"

	kubeSystem = "kube-system"
)

// Config is what the in-cluster objects are rendered from.
type Config struct {
	// ServiceCIDR is the hosted cluster's service network.
	ServiceCIDR string
	// ClusterDomain defaults to clusternet.ClusterDomain.
	ClusterDomain string
	// APIServerAddress and APIServerPort are where pods and nodes reach the
	// hosted API server (spec.networking.apiServer: each node's local
	// proxy): the endpoints of the `kubernetes` Service.
	APIServerAddress string
	APIServerPort    int32
	// Image runs the data plane's components (the hypershift image).
	Image string
	// Konnectivity configures the agent; nil renders no agent objects
	// (its certificates or the server's port do not exist yet).
	Konnectivity *Konnectivity
	// Releases publishes the release server to joined nodes (platform
	// None); nil renders none of its objects.
	Releases *Releases
	// WorkloadIdentityWebhook registers the webhook beside the control
	// plane (spec.workloadIdentityWebhook); nil renders none of its
	// objects.
	WorkloadIdentityWebhook *WorkloadIdentityWebhook
	// Volumes makes the CSI driver and StorageClasses of the management
	// cluster's storage (spec.platform.host.storageDriver); nil renders
	// none of them.
	Volumes *Volumes
}

// Konnectivity is what the agent needs to dial the control plane's
// Konnectivity server.
type Konnectivity struct {
	// ServerHost and ServerPort are the server's agent endpoint,
	// published like the API endpoint.
	ServerHost string
	ServerPort int
	// CA verifies the server; Cert and Key are the agent's client
	// certificate (PEM).
	CA, Cert, Key []byte
}

// Render returns the objects to apply in the hosted cluster, in the order
// to apply them (RBAC and configuration before the workloads that use them).
func Render(cfg Config) ([]client.Object, error) {
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = clusternet.ClusterDomain
	}
	dnsIP, err := clusternet.ClusterDNSIP(cfg.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	apiAddr, err := netip.ParseAddr(cfg.APIServerAddress)
	if err != nil || !apiAddr.Is4() {
		return nil, fmt.Errorf("spec.networking.apiServer.advertiseAddress %q: must be an IPv4 address", cfg.APIServerAddress)
	}
	if cfg.APIServerPort <= 0 || cfg.APIServerPort > 65535 {
		return nil, fmt.Errorf("spec.networking.apiServer.port %d: must be 1-65535", cfg.APIServerPort)
	}
	if cfg.Image == "" {
		return nil, fmt.Errorf("data plane image: empty")
	}
	var objs []client.Object
	objs = append(objs, kubernetesEndpoints(apiAddr.String(), cfg.APIServerPort)...)
	objs = append(objs, nodeProxierBinding())
	objs = append(objs, clusterDNS(cfg, dnsIP.String())...)
	if k := cfg.Konnectivity; k != nil {
		agent, err := konnectivityAgent(cfg.Image, *k)
		if err != nil {
			return nil, err
		}
		objs = append(objs, agent...)
	}
	if r := cfg.Releases; r != nil {
		objs = append(objs, releasesObjects(*r)...)
	}
	if w := cfg.WorkloadIdentityWebhook; w != nil {
		webhook, err := workloadIdentityObjects(*w)
		if err != nil {
			return nil, err
		}
		objs = append(objs, webhook...)
	}
	if v := cfg.Volumes; v != nil {
		objs = append(objs, volumesObjects(*v)...)
	}
	for _, o := range objs {
		// A new map: workloads share theirs with selectors and pod
		// templates, which must not select by the managed-by label
		// (selectors are immutable).
		labels := map[string]string{ManagedByLabel: ManagedBy}
		for k, v := range o.GetLabels() {
			labels[k] = v
		}
		o.SetLabels(labels)
	}
	return objs, nil
}
