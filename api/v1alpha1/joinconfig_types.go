package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JoinConfigSpec says how a machine joins its hosted cluster.
type JoinConfigSpec struct {
	// nodePool is the NodePool, in the HostedCluster's namespace, that the
	// machine's Node joins: the bootstrap token issued for the machine is
	// that pool's, and the Node is bound to it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	NodePool string `json:"nodePool"`
	// tokenTTL is how long the machine's single-use bootstrap token is
	// valid: the machine must have joined by then. Default 1h, at most 24h.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="spec.tokenTTL must be between 1m and 24h, such as 1h"
	TokenTTL *metav1.Duration `json:"tokenTTL,omitempty"`
}

// JoinConfigInitialization is Cluster API's bootstrap initialization.
type JoinConfigInitialization struct {
	// dataSecretCreated is true once the userdata Secret exists (Cluster
	// API's bootstrap contract).
	// +optional
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// JoinConfigStatus is what the JoinConfig controller made.
type JoinConfigStatus struct {
	// initialization says whether the userdata is ready.
	// +optional
	Initialization JoinConfigInitialization `json:"initialization,omitzero"`
	// dataSecretName is the Secret, in this namespace, whose key `value`
	// holds the machine's first-boot userdata (cloud-config).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DataSecretName *string `json:"dataSecretName,omitempty"`
	// observedGeneration is the generation last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready says whether the userdata is made and, when not,
	// why.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// JoinConfig is a Cluster API bootstrap config: the first-boot userdata of
// one machine, which runs `hypershift join` into the hosted cluster of the
// machine's Cluster with a single-use bootstrap token of a NodePool. Cluster
// API clones it from a JoinConfigTemplate for each Machine; every
// infrastructure provider runs the same userdata.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=hypershift;cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="NodePool",type=string,JSONPath=".spec.nodePool"
// +kubebuilder:printcolumn:name="DataSecret",type=string,JSONPath=".status.dataSecretName"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type JoinConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   JoinConfigSpec   `json:"spec"`
	Status JoinConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// JoinConfigList is a list of JoinConfigs.
type JoinConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []JoinConfig `json:"items"`
}

// JoinConfigTemplateResource is what a JoinConfig is cloned from.
type JoinConfigTemplateResource struct {
	Spec JoinConfigSpec `json:"spec"`
}

// JoinConfigTemplateSpec holds the template.
type JoinConfigTemplateSpec struct {
	Template JoinConfigTemplateResource `json:"template"`
}

// JoinConfigTemplate is the JoinConfig a MachineDeployment's Machines get
// (Cluster API's bootstrap config template).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=hypershift;cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
type JoinConfigTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec JoinConfigTemplateSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// JoinConfigTemplateList is a list of JoinConfigTemplates.
type JoinConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []JoinConfigTemplate `json:"items"`
}
