package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default networks of a hosted cluster (those `hypershift create cluster`
// uses unless told otherwise).
const (
	DefaultClusterCIDR = "10.132.0.0/14"
	DefaultServiceCIDR = "172.31.0.0/16"
	DefaultHostPrefix  = 23
)

// NewHostedCluster returns the HostedCluster `hypershift create cluster`
// makes by default: the given platform and Kubernetes version, managed etcd,
// the default networks, the API server published on a host port, a single
// replica of each component.
func NewHostedCluster(namespace, name string, platform PlatformType, kubernetesVersion string) *HostedCluster {
	return &HostedCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "HostedCluster"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: HostedClusterSpec{
			KubernetesVersion: kubernetesVersion,
			Platform:          PlatformSpec{Type: platform},
			Etcd:              EtcdSpec{ManagementType: Managed},
			Networking: ClusterNetworking{
				ClusterNetwork: []ClusterNetworkEntry{{CIDR: DefaultClusterCIDR, HostPrefix: DefaultHostPrefix}},
				ServiceNetwork: []ServiceNetworkEntry{{CIDR: DefaultServiceCIDR}},
			},
			Services: []ServicePublishingStrategyMapping{{
				Service:                   APIServer,
				ServicePublishingStrategy: ServicePublishingStrategy{Type: HostPort},
			}},
			ControllerAvailabilityPolicy: SingleReplica,
		},
	}
}

// APIServerPublishing is spec.services for the API server published by
// publishing (HostPort, NodePort, LoadBalancer) on address (and, for a
// NodePort, nodePort; 0 lets the cluster choose).
func APIServerPublishing(publishing PublishingStrategyType, address string, nodePort int32) []ServicePublishingStrategyMapping {
	strategy := ServicePublishingStrategy{Type: publishing}
	switch strategy.Type {
	case NodePort:
		strategy.NodePort = &NodePortPublishingStrategy{Address: address, Port: nodePort}
	case LoadBalancer:
		strategy.LoadBalancer = &LoadBalancerPublishingStrategy{Hostname: address}
	}
	return []ServicePublishingStrategyMapping{{Service: APIServer, ServicePublishingStrategy: strategy}}
}

// EtcdVolume is spec.etcd.managed for etcd's data on a volume of class and
// size (either may be empty: the cluster's default); size must have been
// checked to parse.
func EtcdVolume(class, size string) *ManagedEtcdSpec {
	pv := &PersistentVolumeEtcdStorageSpec{}
	if class != "" {
		pv.StorageClassName = &class
	}
	if size != "" {
		q := resource.MustParse(size)
		pv.Size = &q
	}
	return &ManagedEtcdSpec{Storage: ManagedEtcdStorageSpec{
		Type: PersistentVolumeEtcdStorage, PersistentVolume: pv,
	}}
}
