package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SingleProcessControlPlaneAnnotation set to "true" on a HostedCluster
// with controllerAvailabilityPolicy SingleReplica runs its kube-apiserver,
// kube-controller-manager and kube-scheduler as one process: less memory,
// less isolation (docs/hosted-clusters.md). It is copied to the
// HostedControlPlane.
const SingleProcessControlPlaneAnnotation = "hypershift.dev/single-process-control-plane"

// PlatformType names where a hosted cluster's nodes come from.
//
// +kubebuilder:validation:Enum=None;Simulated
type PlatformType string

const (
	// NonePlatform means nodes are brought by the user (`hypershift join`).
	NonePlatform PlatformType = "None"
	// SimulatedPlatform means nodes are simulated by a node agent, for development,
	// CI and scale tests.
	SimulatedPlatform PlatformType = "Simulated"
)

// EtcdManagementType says who runs a hosted cluster's etcd.
//
// +kubebuilder:validation:Enum=Managed;Unmanaged
type EtcdManagementType string

const (
	// Managed etcd is run by hypershift, one dedicated etcd per hosted cluster.
	Managed EtcdManagementType = "Managed"
	// Unmanaged etcd is run by the user. Not supported yet: such a cluster
	// reports ValidConfiguration=False.
	Unmanaged EtcdManagementType = "Unmanaged"
)

// AvailabilityPolicy is the replication of control-plane components.
//
// +kubebuilder:validation:Enum=SingleReplica;HighlyAvailable
type AvailabilityPolicy string

const (
	// SingleReplica runs one instance of every component.
	SingleReplica AvailabilityPolicy = "SingleReplica"
	// HighlyAvailable runs replicated components.
	HighlyAvailable AvailabilityPolicy = "HighlyAvailable"
)

// PlatformSpec selects the platform of a hosted cluster.
type PlatformSpec struct {
	// type is the platform the cluster's nodes run on. Immutable.
	//
	// +kubebuilder:default=None
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.type is immutable"
	Type PlatformType `json:"type,omitempty"`
}

// EtcdSpec configures a hosted cluster's etcd.
type EtcdSpec struct {
	// managementType says who runs etcd. Immutable.
	//
	// +kubebuilder:default=Managed
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.etcd.managementType is immutable"
	ManagementType EtcdManagementType `json:"managementType,omitempty"`
}

// ClusterNetworkEntry is a range of pod IP addresses.
type ClusterNetworkEntry struct {
	// cidr is the pod network range.
	//
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="spec.networking.clusterNetwork[].cidr must be a CIDR such as 10.132.0.0/14"
	CIDR string `json:"cidr"`

	// hostPrefix is the prefix length of each node's pod range.
	//
	// +optional
	// +kubebuilder:validation:Minimum=8
	// +kubebuilder:validation:Maximum=30
	HostPrefix int32 `json:"hostPrefix,omitempty"`
}

// ServiceNetworkEntry is a range of service IP addresses.
type ServiceNetworkEntry struct {
	// cidr is the service network range.
	//
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="spec.networking.serviceNetwork[].cidr must be a CIDR such as 172.31.0.0/16"
	CIDR string `json:"cidr"`
}

// ClusterNetworking holds a hosted cluster's network ranges.
//
// +kubebuilder:validation:XValidation:rule="!has(self.apiServer) || !has(self.apiServer.advertiseAddress) || !isIP(self.apiServer.advertiseAddress) || (self.clusterNetwork.all(c, !isCIDR(c.cidr) || !cidr(c.cidr).containsIP(self.apiServer.advertiseAddress)) && self.serviceNetwork.all(s, !isCIDR(s.cidr) || !cidr(s.cidr).containsIP(self.apiServer.advertiseAddress)))",message="spec.networking.apiServer.advertiseAddress must lie outside spec.networking.clusterNetwork and spec.networking.serviceNetwork"
// +kubebuilder:validation:XValidation:rule="self.clusterNetwork.all(c, self.serviceNetwork.all(s, !isCIDR(c.cidr) || !isCIDR(s.cidr) || (!cidr(c.cidr).containsCIDR(cidr(s.cidr)) && !cidr(s.cidr).containsCIDR(cidr(c.cidr)))))",message="spec.networking.serviceNetwork must not overlap spec.networking.clusterNetwork"
type ClusterNetworking struct {
	// clusterNetwork lists the pod network ranges. One range only: the
	// control plane is rendered from the first, so a second one would be
	// ignored. MaxItems bounds the rule's cost; the rule gives the reason.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) == 1",message="spec.networking.clusterNetwork must have exactly one entry: dual-stack (a second range) is not supported yet"
	// +kubebuilder:default={{cidr: "10.132.0.0/14", hostPrefix: 23}}
	ClusterNetwork []ClusterNetworkEntry `json:"clusterNetwork"`

	// serviceNetwork lists the service network ranges. One range only, as
	// for clusterNetwork.
	//
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:XValidation:rule="size(self) == 1",message="spec.networking.serviceNetwork must have exactly one entry: dual-stack (a second range) is not supported yet"
	// +kubebuilder:default={{cidr: "172.31.0.0/16"}}
	// +optional
	ServiceNetwork []ServiceNetworkEntry `json:"serviceNetwork,omitempty"`

	// apiServer is where pods and node components reach the hosted API
	// server: every real node runs a local proxy on advertiseAddress:port
	// that forwards to the published endpoint, and the `kubernetes`
	// Service's endpoints point there (HyperShift's
	// networking.apiServer). The address must lie outside the cluster and
	// service networks.
	//
	// +kubebuilder:default={advertiseAddress: "172.20.0.1", port: 6443}
	// +optional
	APIServer *APIServerNetworking `json:"apiServer,omitempty"`
}

// Defaults of spec.networking.apiServer (HyperShift's).
const (
	DefaultAPIServerAdvertiseAddress = "172.20.0.1"
	DefaultAPIServerPort             = 6443
)

// APIServerNetworking is the node-local address of the hosted API server.
type APIServerNetworking struct {
	// advertiseAddress is the IPv4 address each node's API server proxy
	// listens on (added to the node's loopback interface by join).
	//
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4 && !ip(self).isLoopback() && !ip(self).isUnspecified()",message="spec.networking.apiServer.advertiseAddress must be an IPv4 address that is neither loopback nor 0.0.0.0, such as 172.20.0.1"
	// +kubebuilder:default="172.20.0.1"
	// +optional
	AdvertiseAddress string `json:"advertiseAddress,omitempty"`

	// port is the port of that proxy.
	//
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=6443
	// +optional
	Port int32 `json:"port,omitempty"`
}

// APIServerAddress returns spec.networking.apiServer with its defaults
// filled in (objects stored before the field existed have none).
func (n ClusterNetworking) APIServerAddress() (string, int32) {
	addr, port := DefaultAPIServerAdvertiseAddress, int32(DefaultAPIServerPort)
	if n.APIServer != nil {
		if n.APIServer.AdvertiseAddress != "" {
			addr = n.APIServer.AdvertiseAddress
		}
		if n.APIServer.Port != 0 {
			port = n.APIServer.Port
		}
	}
	return addr, port
}

// ServiceType names a control-plane service that is published.
type ServiceType string

const (
	// APIServer is the hosted kube-apiserver.
	APIServer ServiceType = "APIServer"
)

// PublishingStrategyType says how a control-plane service is reached.
// LoadBalancer, NodePort and Route are HyperShift's other strategies; they
// are declared so that such specs are refused with a reason rather than as
// unknown values.
//
// +kubebuilder:validation:Enum=HostPort;LoadBalancer;NodePort;Route
type PublishingStrategyType string

const (
	// HostPort publishes the service on a port of the management host
	// (the process runtime's way).
	HostPort PublishingStrategyType = "HostPort"
)

// ServicePublishingStrategy says how one service is published.
type ServicePublishingStrategy struct {
	// type is the publishing strategy. Only HostPort: the process runtime
	// runs the API server on the management host, on a port it picks, at
	// the address of `up --endpoint-host`; nothing else can publish it.
	//
	// +kubebuilder:validation:XValidation:rule="self == 'HostPort'",message="spec.services[].servicePublishingStrategy.type must be HostPort: the process runtime publishes the API server on a port of the management host; LoadBalancer, NodePort and Route are not supported"
	Type PublishingStrategyType `json:"type"`
}

// ServicePublishingStrategyMapping maps a service to its publishing strategy.
type ServicePublishingStrategyMapping struct {
	// service is the published service.
	//
	// +kubebuilder:validation:Enum=APIServer
	Service ServiceType `json:"service"`
	// servicePublishingStrategy says how it is published.
	ServicePublishingStrategy `json:"servicePublishingStrategy"`
}

// HostedClusterSpec is the desired state of a hosted cluster.
type HostedClusterSpec struct {
	// kubernetesVersion is the Kubernetes version of the hosted control plane.
	// Only versions compiled into this hypershift build can run.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self in ['v1.37.1']",message="spec.kubernetesVersion is not supported: this build runs v1.37.1"
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// platform selects where the cluster's nodes run.
	//
	// +kubebuilder:default={type: None}
	// +optional
	Platform PlatformSpec `json:"platform,omitzero"`

	// etcd configures the cluster's datastore.
	//
	// +kubebuilder:default={managementType: Managed}
	// +optional
	Etcd EtcdSpec `json:"etcd,omitzero"`

	// networking holds the cluster's network ranges. Immutable: the API
	// server's serving certificate (the `kubernetes` Service address), the
	// controller manager's node ranges and the nodes' pod ranges are made
	// from it when the cluster is created.
	//
	// +kubebuilder:default={clusterNetwork: {{cidr: "10.132.0.0/14", hostPrefix: 23}}, serviceNetwork: {{cidr: "172.31.0.0/16"}}}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.networking is immutable: certificates and node pod ranges are made from it at creation; create a new cluster for other networks"
	Networking ClusterNetworking `json:"networking"`

	// services says how control-plane services are published: only the
	// API server, only by HostPort (the default when the list is empty).
	//
	// +optional
	// +listType=map
	// +listMapKey=service
	// +kubebuilder:validation:MaxItems=8
	Services []ServicePublishingStrategyMapping `json:"services,omitempty"`

	// controllerAvailabilityPolicy is the replication of control-plane
	// components: SingleReplica runs one of each; HighlyAvailable runs three
	// etcd members, two API servers behind a stable endpoint, and two
	// leader-elected controller managers and schedulers. Immutable.
	//
	// +kubebuilder:default=SingleReplica
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.controllerAvailabilityPolicy is immutable"
	// +optional
	ControllerAvailabilityPolicy AvailabilityPolicy `json:"controllerAvailabilityPolicy,omitempty"`

	// pausedUntil stops reconciliation until the given RFC 3339 date, or
	// indefinitely when "true".
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == 'true' || self == 'false' || self.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$')",message="spec.pausedUntil must be an RFC 3339 date or \"true\""
	PausedUntil *string `json:"pausedUntil,omitempty"`
}

// APIEndpoint is where a hosted kube-apiserver listens.
type APIEndpoint struct {
	// host is the address clients connect to.
	Host string `json:"host"`
	// port is the port clients connect to.
	Port int32 `json:"port"`
}

// KubeconfigSecretRef names a Secret with a kubeconfig.
type KubeconfigSecretRef struct {
	// name is the Secret's name.
	Name string `json:"name"`
	// key is the data key that holds the kubeconfig.
	Key string `json:"key"`
}

// HostedClusterStatus is the observed state of a hosted cluster.
type HostedClusterStatus struct {
	// version is the Kubernetes version the control plane runs.
	// +optional
	Version string `json:"version,omitempty"`

	// controlPlaneEndpoint is where the hosted API server is reached.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitzero"`

	// endpoint is the hosted API server's URL.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// kubeconfig names the Secret in the HostedCluster's namespace with the
	// admin kubeconfig.
	// +optional
	KubeConfig *KubeconfigSecretRef `json:"kubeconfig,omitempty"`

	// controlPlaneNamespace is the namespace that holds the control plane.
	// +optional
	ControlPlaneNamespace string `json:"controlPlaneNamespace,omitempty"`

	// nodeCount is how many nodes the cluster's NodePools have.
	// +optional
	NodeCount int32 `json:"nodeCount,omitempty"`

	// readyNodeCount is how many of them are Ready.
	// +optional
	ReadyNodeCount int32 `json:"readyNodeCount,omitempty"`

	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the cluster's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HostedCluster is a Kubernetes cluster whose control plane is hosted by the
// management plane and whose nodes live elsewhere.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hc;hcs,categories=hypershift
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".status.version"
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=".status.conditions[?(@.type==\"Available\")].status"
// +kubebuilder:printcolumn:name="Progressing",type=string,JSONPath=".status.conditions[?(@.type==\"Progressing\")].status"
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=".status.nodeCount"
// +kubebuilder:printcolumn:name="Ready Nodes",type=integer,JSONPath=".status.readyNodeCount"
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=".status.endpoint"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label: lower-case letters, digits and '-', starting with a letter"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name must be at most 40 characters, so that the control-plane namespace NAMESPACE-NAME fits in 63"
type HostedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostedClusterSpec   `json:"spec,omitempty"`
	Status HostedClusterStatus `json:"status,omitempty"`
}

// HostedClusterList is a list of HostedClusters.
//
// +kubebuilder:object:root=true
type HostedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostedCluster `json:"items"`
}
