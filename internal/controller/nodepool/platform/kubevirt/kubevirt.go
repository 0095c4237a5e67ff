// Package kubevirt is the KubeVirt platform: a pool's machines are
// KubeVirt VirtualMachines, made by cluster-api-provider-kubevirt (CAPK,
// which the user installs) from the KubevirtMachineTemplate rendered here,
// on the management cluster or on an external infrastructure cluster.
// Cluster API's part is platform/clusterapi's.
package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
)

// Group and Version of CAPK's kinds.
const (
	Group   = "infrastructure.cluster.x-k8s.io"
	Version = "v1alpha1"
)

// ProviderIDPrefix begins CAPK's provider IDs: kubevirt://VM, the VM named
// like its KubevirtMachine and the guest's hostname.
const ProviderIDPrefix = "kubevirt://"

// Defaults of the API, for a pool written before they were.
var (
	defaultCores      = int64(2)
	defaultMemory     = resource.MustParse("8Gi")
	defaultVolumeSize = resource.MustParse("32Gi")
)

// Infrastructure is CAPK's part of a pool.
var Infrastructure = clusterapi.Infrastructure{
	Group:               Group,
	Version:             Version,
	ClusterKind:         "KubevirtCluster",
	MachineKind:         "KubevirtMachine",
	MachineTemplateKind: "KubevirtMachineTemplate",
	ExternallyManaged:   true,
	ClusterSpec:         clusterSpec,
	ClusterObjects:      clusterObjects,
	MachineSpec:         machineSpec,
	Validate:            validate,
	NodeName:            clusterapi.ProviderIDNodeName(ProviderIDPrefix),
	Capacity:            capacity,
}

// New is the KubeVirt platform of the management cluster c; start runs
// Cluster API's controllers.
func New(c client.Client, start func(context.Context) error) *clusterapi.Platform {
	return &clusterapi.Platform{Type: hypershiftv1alpha1.KubeVirtPlatform, Client: c, Infra: Infrastructure, Start: start}
}

// InfraKubeconfigSecret is the Secret of the control-plane namespace CAPK
// reaches an external infrastructure cluster with (keys kubeconfig and
// namespace, as CAPK reads them).
func InfraKubeconfigSecret(cluster string) string { return cluster + "-infra-kubeconfig" }

func spec(p *platform.Pool) (*hypershiftv1alpha1.KubeVirtPlatformSpec, *hypershiftv1alpha1.KubeVirtNodePoolPlatform) {
	return p.HostedCluster.Spec.Platform.KubeVirt, p.NodePool.Spec.Platform.KubeVirt
}

func validate(p *platform.Pool) error {
	hc, np := spec(p)
	switch {
	case hc == nil:
		return errors.New("HostedCluster has no spec.platform.kubevirt")
	case np == nil:
		return errors.New("spec.platform.kubevirt is missing")
	case np.AttachDefaultNetwork != nil && !*np.AttachDefaultNetwork && len(np.AdditionalNetworks) == 0:
		return errors.New("spec.platform.kubevirt: attachDefaultNetwork false needs an additional network, or the VirtualMachines have no network")
	}
	if np.Compute.Memory != nil && np.Compute.Memory.Cmp(minMemory) < 0 {
		return fmt.Errorf("spec.platform.kubevirt.compute.memory %s is less than %s", np.Compute.Memory, &minMemory)
	}
	if pv := np.RootVolume.Persistent; pv != nil && pv.Size != nil && pv.Size.Cmp(minVolume) < 0 {
		return fmt.Errorf("spec.platform.kubevirt.rootVolume.persistent.size %s is less than %s", pv.Size, &minVolume)
	}
	if hc.Credentials == nil {
		// The VirtualMachines run in the control-plane namespace of the
		// management cluster, made with the provider's rights: they join
		// only networks of that namespace, not another tenant's.
		cp := clusterapi.ControlPlaneNamespace(p)
		for _, n := range np.AdditionalNetworks {
			if ns, _, _ := strings.Cut(n.Name, "/"); ns != cp {
				return fmt.Errorf("spec.platform.kubevirt.additionalNetworks: %s is not of the cluster's control-plane namespace %s, where its VirtualMachines run on the management cluster", n.Name, cp)
			}
		}
	}
	return nil
}

// Smallest memory and root volume a machine is made with.
var (
	minMemory = resource.MustParse("1Gi")
	minVolume = resource.MustParse("1Gi")
)

// infraNamespace is where the VirtualMachines are made: the external
// cluster's namespace, or the control-plane namespace.
func infraNamespace(p *platform.Pool) string {
	if hc, _ := spec(p); hc != nil && hc.Credentials != nil {
		return hc.Credentials.InfraNamespace
	}
	return clusterapi.ControlPlaneNamespace(p)
}

func clusterSpec(p *platform.Pool) map[string]any {
	hc, _ := spec(p)
	if hc == nil || hc.Credentials == nil {
		return map[string]any{}
	}
	return map[string]any{"infraClusterSecretRef": map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"namespace": clusterapi.ControlPlaneNamespace(p), "name": InfraKubeconfigSecret(p.HostedCluster.Name),
	}}
}

// clusterObjects copies the external infrastructure cluster's kubeconfig,
// reduced to what kubeconfig.Sanitize keeps (no exec plugin, file or
// proxy of the user's reaches the provider), to the control-plane
// namespace.
func clusterObjects(ctx context.Context, r client.Reader, p *platform.Pool) ([]*unstructured.Unstructured, error) {
	hc, _ := spec(p)
	if hc == nil || hc.Credentials == nil {
		return nil, nil
	}
	ref := hc.Credentials.InfraKubeConfigSecret
	field := "spec.platform.kubevirt.credentials.infraKubeConfigSecret"
	s, err := clusterapi.UserSecret(ctx, r, p.HostedCluster, ref.Name, field)
	if err != nil {
		return nil, err
	}
	data, ok := s.Data[ref.Key]
	if !ok {
		return nil, clusterapi.Problem("Secret %s/%s, named by %s, has no key %q", s.Namespace, s.Name, field, ref.Key)
	}
	kc, err := kubeconfig.Sanitize(data)
	if err != nil {
		return nil, clusterapi.Problem("Secret %s/%s, named by %s: %v", s.Namespace, s.Name, field, err)
	}
	return []*unstructured.Unstructured{clusterapi.SecretObject(clusterapi.ControlPlaneNamespace(p), InfraKubeconfigSecret(p.HostedCluster.Name), p.HostedCluster.Name, map[string][]byte{
		"kubeconfig": kc,
		"namespace":  []byte(hc.Credentials.InfraNamespace),
	})}, nil
}

// machineSpec is the KubevirtMachineTemplate's machine: a VirtualMachine
// of the pool's cores and memory booting its disk image, on the pod
// network (masquerade) and its additional networks (bridged). CAPK adds
// the cloud-init volume with the machine's userdata. The bootstrap check
// is none: CAPK's default logs in over SSH, with keys hypershift does not
// hand out.
func machineSpec(p *platform.Pool) map[string]any {
	_, kv := spec(p)
	if kv == nil {
		return map[string]any{}
	}
	cores, memory := defaultCores, defaultMemory
	if kv.Compute.Cores > 0 {
		cores = int64(kv.Compute.Cores)
	}
	if kv.Compute.Memory != nil {
		memory = *kv.Compute.Memory
	}
	vm := map[string]any{"runStrategy": "Always"}
	rootDisk := map[string]any{"name": "rootdisk", "disk": map[string]any{"bus": "virtio"}}
	image := kv.RootVolume.DiskImage.ContainerDiskImage
	rootVolume := map[string]any{"name": "rootdisk", "containerDisk": map[string]any{"image": image}}
	if pv := kv.RootVolume.Persistent; pv != nil {
		size := defaultVolumeSize
		if pv.Size != nil {
			size = *pv.Size
		}
		storage := map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": size.String()}}}
		if pv.StorageClass != "" {
			storage["storageClassName"] = pv.StorageClass
		}
		// CAPK prefixes a DataVolume's name with its VirtualMachine's.
		vm["dataVolumeTemplates"] = []any{map[string]any{
			"metadata": map[string]any{"name": "rootvolume"},
			"spec": map[string]any{
				"source":  map[string]any{"registry": map[string]any{"url": "docker://" + image}},
				"storage": storage,
			},
		}}
		rootVolume = map[string]any{"name": "rootdisk", "dataVolume": map[string]any{"name": "rootvolume"}}
	}
	var interfaces, networks []any
	if kv.AttachDefaultNetwork == nil || *kv.AttachDefaultNetwork {
		interfaces = append(interfaces, map[string]any{"name": "default", "masquerade": map[string]any{}})
		networks = append(networks, map[string]any{"name": "default", "pod": map[string]any{}})
	}
	for i, n := range kv.AdditionalNetworks {
		name := fmt.Sprintf("net%d", i+1)
		interfaces = append(interfaces, map[string]any{"name": name, "bridge": map[string]any{}})
		networks = append(networks, map[string]any{"name": name, "multus": map[string]any{"networkName": n.Name}})
	}
	vm["template"] = map[string]any{
		"metadata": map[string]any{"labels": map[string]any{
			hypershiftv1alpha1.NodePoolLabel: p.NodePool.Name,
			// The guest's load balancers select the cluster's
			// virt-launcher pods by it (Mirrors).
			hostedref.ClusterUIDLabel: string(p.HostedCluster.UID),
		}},
		"spec": map[string]any{
			"domain": map[string]any{
				"cpu":    map[string]any{"cores": cores},
				"memory": map[string]any{"guest": memory.String()},
				"devices": map[string]any{
					"disks":      []any{rootDisk},
					"interfaces": interfaces,
				},
			},
			"networks": networks,
			"volumes":  []any{rootVolume},
		},
	}
	return map[string]any{
		"virtualMachineBootstrapCheck": map[string]any{"checkStrategy": "none"},
		"virtualMachineTemplate": map[string]any{
			"metadata": map[string]any{"namespace": infraNamespace(p)},
			"spec":     vm,
		},
	}
}

// capacity is what a VirtualMachine of the pool offers its Node.
func capacity(np *hypershiftv1alpha1.NodePool) corev1.ResourceList {
	kv := np.Spec.Platform.KubeVirt
	if kv == nil {
		return nil
	}
	cores, memory := defaultCores, defaultMemory
	if kv.Compute.Cores > 0 {
		cores = int64(kv.Compute.Cores)
	}
	if kv.Compute.Memory != nil {
		memory = *kv.Compute.Memory
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(cores, resource.DecimalSI),
		corev1.ResourceMemory: memory,
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
}
