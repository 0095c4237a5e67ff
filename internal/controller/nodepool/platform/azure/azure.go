// Package azure is the Azure platform: a pool's machines are Azure
// virtual machines, made by cluster-api-provider-azure (CAPZ, which the
// user installs) from the AzureMachineTemplate rendered here, in the
// resource group and virtual network the HostedCluster names, with a
// service principal of a Secret the user names. Cluster API's part is
// platform/clusterapi's.
package azure

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
)

// Group and Version of CAPZ's kinds.
const (
	Group   = "infrastructure.cluster.x-k8s.io"
	Version = "v1beta1"
)

// ProviderIDPrefix begins CAPZ's provider IDs:
// azure:///subscriptions/…/virtualMachines/NAME.
const ProviderIDPrefix = "azure://"

// Keys of the user's credentials Secret: a service principal, named as
// Azure's SDKs name their environment.
const (
	ClientIDKey     = "AZURE_CLIENT_ID"
	TenantIDKey     = "AZURE_TENANT_ID"
	ClientSecretKey = "AZURE_CLIENT_SECRET" //nolint:gosec // a key name
)

var identityGVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: "AzureClusterIdentity"}

// Infrastructure is CAPZ's part of a pool.
var Infrastructure = clusterapi.Infrastructure{
	Group:               Group,
	Version:             Version,
	ClusterKind:         "AzureCluster",
	MachineKind:         "AzureMachine",
	MachineTemplateKind: "AzureMachineTemplate",
	ExternallyManaged:   true,
	ClusterSpec:         clusterSpec,
	ClusterObjects:      clusterObjects,
	MachineSpec:         machineSpec,
	Validate:            validate,
	NodeName:            nodeName,
}

// New is the Azure platform of the management cluster c; start runs
// Cluster API's controllers.
func New(c client.Client, start func(context.Context) error) *clusterapi.Platform {
	return &clusterapi.Platform{Type: hypershiftv1alpha1.AzurePlatform, Client: c, Infra: Infrastructure, Start: start}
}

// IdentityName is the cluster's AzureClusterIdentity in its control-plane
// namespace.
func IdentityName(cluster string) string { return cluster + "-azure" }

// CredentialsSecret is the Secret of the identity's client secret, beside
// it.
func CredentialsSecret(cluster string) string { return cluster + "-azure-credentials" }

func validate(p *platform.Pool) error {
	hc, np := p.HostedCluster.Spec.Platform.Azure, p.NodePool.Spec.Platform.Azure
	switch {
	case hc == nil:
		return errors.New("HostedCluster has no spec.platform.azure")
	case np == nil:
		return errors.New("spec.platform.azure is missing")
	case !strings.HasPrefix(strings.ToLower(np.SubnetID), strings.ToLower(hc.VnetID)+"/subnets/"):
		return fmt.Errorf("spec.platform.azure.subnetID %s is not a subnet of the cluster's virtual network %s", np.SubnetID, hc.VnetID)
	}
	return nil
}

// vnet is the name and resource group of a virtual network's resource ID.
func vnet(id string) (name, group string) {
	parts := strings.Split(id, "/")
	// /subscriptions/S/resourceGroups/G/providers/Microsoft.Network/virtualNetworks/N
	if len(parts) == 9 {
		return parts[8], parts[4]
	}
	return "", ""
}

func clusterSpec(p *platform.Pool) map[string]any {
	az := p.HostedCluster.Spec.Platform.Azure
	if az == nil {
		return map[string]any{}
	}
	name, group := vnet(az.VnetID)
	cloud := az.Cloud
	if cloud == "" {
		cloud = "AzurePublicCloud"
	}
	return map[string]any{
		"location":            az.Location,
		"subscriptionID":      az.SubscriptionID,
		"resourceGroup":       az.ResourceGroup,
		"azureEnvironment":    cloud,
		"controlPlaneEnabled": false,
		"identityRef": map[string]any{
			"kind": identityGVK.Kind, "name": IdentityName(p.HostedCluster.Name), "namespace": clusterapi.ControlPlaneNamespace(p),
		},
		"networkSpec": map[string]any{"vnet": map[string]any{"name": name, "resourceGroup": group}},
	}
}

// uuid is how Azure writes tenant and client IDs.
var uuid = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// secretValue is a client secret: printable ASCII, bounded.
var secretValue = regexp.MustCompile(`^[!-~]{1,1000}$`)

// clusterObjects are the cluster's identity in its control-plane
// namespace: an AzureClusterIdentity of the service principal (usable
// from that namespace only, CAPZ's default) and its client secret.
func clusterObjects(ctx context.Context, c client.Reader, p *platform.Pool) ([]*unstructured.Unstructured, error) {
	az := p.HostedCluster.Spec.Platform.Azure
	if az == nil {
		return nil, nil
	}
	const field = "spec.platform.azure.credentialsSecret"
	s, err := clusterapi.UserSecret(ctx, c, p.HostedCluster, az.CredentialsSecret.Name, field)
	if err != nil {
		return nil, err
	}
	for _, k := range []struct {
		key  string
		want *regexp.Regexp
		what string
	}{
		{ClientIDKey, uuid, "a client ID (a UUID)"},
		{TenantIDKey, uuid, "a tenant ID (a UUID)"},
		{ClientSecretKey, secretValue, "a client secret (printable, at most 1000 bytes)"},
	} {
		v, ok := s.Data[k.key]
		if !ok {
			return nil, clusterapi.Problem("Secret %s/%s, named by %s, has no key %s", s.Namespace, s.Name, field, k.key)
		}
		if !k.want.Match(v) {
			return nil, clusterapi.Problem("Secret %s/%s, named by %s: %s is not %s", s.Namespace, s.Name, field, k.key, k.what)
		}
	}
	ns, cluster := clusterapi.ControlPlaneNamespace(p), p.HostedCluster.Name
	identity := clusterapi.Object(identityGVK, ns, IdentityName(cluster), cluster, map[string]any{"spec": map[string]any{
		"type":         "ServicePrincipal",
		"clientID":     string(s.Data[ClientIDKey]),
		"tenantID":     string(s.Data[TenantIDKey]),
		"clientSecret": map[string]any{"name": CredentialsSecret(cluster), "namespace": ns},
		// Its own namespace only, said outright: CAPZ reads a missing
		// allowedNamespaces as none.
		"allowedNamespaces": map[string]any{"list": []any{ns}},
	}})
	secret := clusterapi.SecretObject(ns, CredentialsSecret(cluster), cluster, map[string][]byte{"clientSecret": s.Data[ClientSecretKey]})
	return []*unstructured.Unstructured{secret, identity}, nil
}

// machineSpec is the AzureMachineTemplate's machine. No SSH key is
// given: CAPZ's defaulting webhook, which its install runs, makes one
// (hypershift keeps no private key, so nobody logs in).
func machineSpec(p *platform.Pool) map[string]any {
	az := p.NodePool.Spec.Platform.Azure
	if az == nil {
		return map[string]any{}
	}
	image := map[string]any{}
	if m := az.Image.AzureMarketplace; az.Image.Type == "AzureMarketplace" && m != nil {
		image["marketplace"] = map[string]any{"publisher": m.Publisher, "offer": m.Offer, "sku": m.SKU, "version": m.Version}
	} else {
		image["id"] = az.Image.ImageID
	}
	size, typ := int64(30), "Premium_LRS"
	if az.OSDisk.SizeGiB > 0 {
		size = int64(az.OSDisk.SizeGiB)
	}
	if az.OSDisk.DiskStorageAccountType != "" {
		typ = az.OSDisk.DiskStorageAccountType
	}
	s := map[string]any{
		"vmSize": az.VMSize,
		"image":  image,
		"osDisk": map[string]any{
			"osType": "Linux", "diskSizeGB": size, "managedDisk": map[string]any{"storageAccountType": typ},
		},
		"networkInterfaces": []any{map[string]any{"subnetName": az.SubnetID[strings.LastIndex(az.SubnetID, "/")+1:]}},
	}
	if az.AvailabilityZone != "" {
		s["failureDomain"] = az.AvailabilityZone
	}
	return s
}

// nodeName is the virtual machine's name, the last part of its provider
// ID (CAPZ names the VM, and its hostname, after the AzureMachine).
func nodeName(m *unstructured.Unstructured) string {
	id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
	rest, ok := strings.CutPrefix(id, ProviderIDPrefix)
	if !ok || !strings.Contains(rest, "/virtualMachines/") {
		return ""
	}
	return strings.ToLower(rest[strings.LastIndex(rest, "/")+1:])
}
