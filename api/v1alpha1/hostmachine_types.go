package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HostPlatform means nodes are machines of the management plane's own
// infrastructure: network namespaces of its host (process runtime) or
// privileged pods of the management cluster (kube runtime;
// docs/machines.md), made by Cluster API with the HostMachine
// infrastructure provider.
const HostPlatform PlatformType = "Host"

// HostProviderIDPrefix begins the provider ID of a machine of platform Host:
// hypershift-host://NAME, NAME being the machine's hostname and its Node's
// name.
const HostProviderIDPrefix = "hypershift-host://"

// HostClusterSpec is Cluster API's infrastructure cluster spec.
type HostClusterSpec struct {
	// controlPlaneEndpoint is where the Cluster's control plane serves;
	// Cluster API copies the Cluster's own. Nothing is made for it.
	// +optional
	ControlPlaneEndpoint ClusterEndpoint `json:"controlPlaneEndpoint,omitzero"`
}

// ClusterEndpoint is a host and port, both optional, as Cluster API's
// infrastructure contract has them.
type ClusterEndpoint struct {
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Host string `json:"host,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
}

// HostClusterInitialization is Cluster API's infrastructure initialization.
type HostClusterInitialization struct {
	// provisioned is true once the cluster's infrastructure is ready: for
	// machines of one host, the machine network.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// HostClusterStatus is what the HostMachine controller observed.
type HostClusterStatus struct {
	// +optional
	Initialization HostClusterInitialization `json:"initialization,omitzero"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HostCluster is Cluster API's infrastructure cluster for machines of the
// management plane's host. It is provisioned when this management plane
// has a machine network.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=hypershift;cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type HostCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostClusterSpec   `json:"spec,omitempty"`
	Status HostClusterStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HostClusterList is a list of HostClusters.
type HostClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostCluster `json:"items"`
}

// HostMachineSpec is Cluster API's infrastructure machine spec.
type HostMachineSpec struct {
	// providerID is hypershift-host://NAME, set by the HostMachine
	// controller once the machine exists; its Node registers with it.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.startsWith('hypershift-host://')",message="spec.providerID must start with hypershift-host://"
	// +kubebuilder:validation:XValidation:rule="oldSelf == '' || self == oldSelf",message="spec.providerID is immutable once set"
	ProviderID string `json:"providerID,omitempty"`
}

// MachineAddress is an address of a machine, as Cluster API reads it.
type MachineAddress struct {
	// type is InternalIP or Hostname.
	// +kubebuilder:validation:Enum=Hostname;ExternalIP;InternalIP;ExternalDNS;InternalDNS
	Type string `json:"type"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Address string `json:"address"`
}

// HostMachineInitialization is Cluster API's infrastructure initialization.
type HostMachineInitialization struct {
	// provisioned is true once the machine exists and its userdata was
	// started in it.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// HostMachineStatus is what the HostMachine controller observed.
type HostMachineStatus struct {
	// +optional
	Initialization HostMachineInitialization `json:"initialization,omitzero"`
	// addresses are the machine's hostname and its address on the machine
	// network.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	Addresses []MachineAddress `json:"addresses,omitempty"`
	// conditions: Ready says whether the machine runs its userdata and,
	// when not, why (reason and message; Cluster API mirrors it as the
	// Machine's InfrastructureReady).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HostMachine is Cluster API's infrastructure machine for a machine of the
// management plane's host: a network namespace of its own with an address
// on the machine network, in which its bootstrap userdata runs
// (docs/machines.md). Cluster API clones one from a HostMachineTemplate for
// each Machine.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=hypershift;cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=".spec.providerID"
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=".status.initialization.provisioned"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type HostMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostMachineSpec   `json:"spec,omitempty"`
	Status HostMachineStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HostMachineList is a list of HostMachines.
type HostMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostMachine `json:"items"`
}

// HostMachineTemplateResource is what a HostMachine is cloned from.
type HostMachineTemplateResource struct {
	// +optional
	Spec HostMachineSpec `json:"spec,omitzero"`
}

// HostMachineTemplateSpec holds the template.
type HostMachineTemplateSpec struct {
	Template HostMachineTemplateResource `json:"template"`
}

// HostMachineTemplate is the HostMachine a MachineDeployment's Machines get
// (Cluster API's infrastructure machine template).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=hypershift;cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
type HostMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HostMachineTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// HostMachineTemplateList is a list of HostMachineTemplates.
type HostMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostMachineTemplate `json:"items"`
}
