package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolLabel is put on every Node of a pool, in the hosted cluster; its
// value is the NodePool's name.
const NodePoolLabel = "hypershift.dev/nodepool"

// NodePool condition types besides those in conditions.go.
const (
	// NodePoolAutoscalingEnabled says whether spec.autoScaling drives the
	// pool's size.
	NodePoolAutoscalingEnabled = "AutoscalingEnabled"
	// NodePoolAutorepairEnabled says whether unhealthy nodes are replaced.
	NodePoolAutorepairEnabled = "AutorepairEnabled"
)

// UpgradeType says how a NodePool's nodes are updated. InPlace is
// HyperShift's other value; it is declared so that it is refused with a
// reason rather than as an unknown value.
//
// +kubebuilder:validation:Enum=Replace;InPlace
type UpgradeType string

const (
	// UpgradeTypeReplace replaces nodes with new ones.
	UpgradeTypeReplace UpgradeType = "Replace"
	// UpgradeTypeInPlace updates nodes where they are. Not supported.
	UpgradeTypeInPlace UpgradeType = "InPlace"
)

// NodePoolManagement configures node lifecycle.
type NodePoolManagement struct {
	// upgradeType says how nodes are updated. Only Replace is accepted:
	// this build runs one Kubernetes version, so nodes are never upgraded
	// and there is nothing for InPlace to do. Immutable.
	//
	// +kubebuilder:default=Replace
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.management.upgradeType is immutable"
	// +kubebuilder:validation:XValidation:rule="self == 'Replace'",message="spec.management.upgradeType must be Replace: InPlace upgrades are not supported (this build runs one Kubernetes version, nodes are never upgraded)"
	UpgradeType UpgradeType `json:"upgradeType,omitempty"`

	// autoRepair replaces nodes that stay unhealthy. Not on platform None:
	// the pool cannot replace nodes that were joined by hand.
	// +optional
	AutoRepair bool `json:"autoRepair,omitempty"`
}

// NodePoolAutoScaling bounds an autoscaled pool.
//
// +kubebuilder:validation:XValidation:rule="self.max >= self.min",message="spec.autoScaling.max must be greater than or equal to spec.autoScaling.min"
type NodePoolAutoScaling struct {
	// min is the smallest number of nodes.
	// +kubebuilder:validation:Minimum=0
	Min int32 `json:"min"`
	// max is the largest number of nodes.
	// +kubebuilder:validation:Minimum=1
	Max int32 `json:"max"`
}

// NodePoolPlatform selects the platform of a pool's nodes.
type NodePoolPlatform struct {
	// type is the platform. Immutable.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.type is immutable"
	Type PlatformType `json:"type"`
}

// Taint is a taint put on every node of a pool.
type Taint struct {
	// key of the taint.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Key string `json:"key"`
	// value of the taint.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`
	// effect of the taint.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect"`
}

// NodePoolSpec is the desired state of a pool of nodes.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.replicas) && has(self.autoScaling))",message="spec.replicas and spec.autoScaling are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="self.platform.type != 'None' || !has(self.autoScaling)",message="spec.autoScaling is not supported on platform None: its nodes are joined by hand (hypershift join) and the pool cannot add or remove them; remove spec.autoScaling"
// +kubebuilder:validation:XValidation:rule="self.platform.type != 'None' || !has(self.management) || !has(self.management.autoRepair) || !self.management.autoRepair",message="spec.management.autoRepair is not supported on platform None: the pool cannot replace nodes joined by hand; set it to false"
type NodePoolSpec struct {
	// clusterName is the HostedCluster, in the same namespace, that the
	// nodes join. Immutable.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterName is immutable"
	ClusterName string `json:"clusterName"`

	// replicas is the number of nodes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Replicas *int32 `json:"replicas,omitempty"`

	// autoScaling lets the pool grow and shrink within bounds. Not on
	// platform None: the pool cannot add or remove nodes joined by hand.
	// +optional
	AutoScaling *NodePoolAutoScaling `json:"autoScaling,omitempty"`

	// platform of the pool's nodes.
	Platform NodePoolPlatform `json:"platform"`

	// management configures node lifecycle.
	//
	// +kubebuilder:default={upgradeType: Replace}
	// +optional
	Management NodePoolManagement `json:"management,omitzero"`

	// nodeDrainTimeout bounds how long a node is drained before removal.
	// +optional
	NodeDrainTimeout *metav1.Duration `json:"nodeDrainTimeout,omitempty"`

	// nodeLabels are put on every node of the pool.
	// +optional
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`

	// taints are put on every node of the pool.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Taints []Taint `json:"taints,omitempty"`

	// pausedUntil stops reconciliation until the given RFC 3339 date, or
	// indefinitely when "true".
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == 'true' || self == 'false' || self.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$')",message="spec.pausedUntil must be an RFC 3339 date or \"true\""
	PausedUntil *string `json:"pausedUntil,omitempty"`
}

// NodePoolStatus is the observed state of a pool.
type NodePoolStatus struct {
	// replicas is the number of nodes that exist.
	// +optional
	Replicas int32 `json:"replicas"`
	// readyReplicas is the number of Ready nodes.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// version is the Kubernetes version of the nodes.
	// +optional
	Version string `json:"version,omitempty"`
	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions describe the pool's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool is a set of nodes of one hosted cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas
// +kubebuilder:resource:shortName=np;nps,categories=hypershift
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=".spec.clusterName"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=".status.replicas"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePoolSpec   `json:"spec,omitempty"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}
