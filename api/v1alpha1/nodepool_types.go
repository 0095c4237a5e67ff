package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// NodePoolLabel is put on every Node of a pool, in the hosted cluster; its
// value is the NodePool's name.
const NodePoolLabel = "hypershift.dev/nodepool"

// NodeKubernetesVersionAnnotation on a Node of a platform None pool that
// upgrades InPlace is the version the NodePool controller wants its kubelet
// to run once drained: the node daemon (`hypershift node run`) fetches that
// release from the control plane and restarts the kubelet from it.
const NodeKubernetesVersionAnnotation = "hypershift.dev/kubernetes-version"

// NodePool condition types besides those in conditions.go.
const (
	// NodePoolAutoscalingEnabled says whether spec.autoScaling drives the
	// pool's size.
	NodePoolAutoscalingEnabled = "AutoscalingEnabled"
	// NodePoolAutorepairEnabled says whether unhealthy nodes are replaced.
	NodePoolAutorepairEnabled = "AutorepairEnabled"
	// NodePoolUpdatingVersion is True while the pool's nodes are moved to
	// spec.kubernetesVersion (HyperShift's name), False once every node
	// runs it or when the version cannot be rolled out (the reason says
	// why).
	NodePoolUpdatingVersion = "UpdatingVersion"
)

// UpgradeType says how a NodePool's nodes are moved to a new version.
//
// +kubebuilder:validation:Enum=Replace;InPlace
type UpgradeType string

const (
	// UpgradeTypeReplace replaces nodes: a new node at the new version
	// first, then the old one is drained and removed.
	UpgradeTypeReplace UpgradeType = "Replace"
	// UpgradeTypeInPlace keeps the nodes: each is drained, its kubelet
	// restarted at the new version, and uncordoned.
	UpgradeTypeInPlace UpgradeType = "InPlace"
)

// Rollout defaults (HyperShift's, which are Cluster API's
// MachineDeployment defaults for Replace).
const (
	DefaultReplaceMaxSurge       = 1
	DefaultReplaceMaxUnavailable = 0
	DefaultInPlaceMaxUnavailable = 1
)

// NodePoolManagement configures node lifecycle.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replace) || !has(self.upgradeType) || self.upgradeType == 'Replace'",message="spec.management.replace applies only to upgradeType Replace: use spec.management.inPlace.maxUnavailable for InPlace"
// +kubebuilder:validation:XValidation:rule="!has(self.inPlace) || (has(self.upgradeType) && self.upgradeType == 'InPlace')",message="spec.management.inPlace applies only to upgradeType InPlace: use spec.management.replace.rollingUpdate for Replace"
type NodePoolManagement struct {
	// upgradeType says how nodes move to a new spec.kubernetesVersion:
	// Replace (a new node first, then the old one is drained and removed)
	// or InPlace (drained, kubelet restarted at the new version,
	// uncordoned). Immutable.
	//
	// +kubebuilder:default=Replace
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.management.upgradeType is immutable"
	UpgradeType UpgradeType `json:"upgradeType,omitempty"`

	// replace configures Replace upgrades.
	// +optional
	Replace *ReplaceUpgrade `json:"replace,omitempty"`

	// inPlace configures InPlace upgrades.
	// +optional
	InPlace *InPlaceUpgrade `json:"inPlace,omitempty"`

	// autoRepair replaces nodes that stay unhealthy. Not on platform None:
	// the pool cannot replace nodes that were joined by hand.
	// +optional
	AutoRepair bool `json:"autoRepair,omitempty"`
}

// ReplaceUpgrade configures how nodes are replaced.
type ReplaceUpgrade struct {
	// rollingUpdate bounds a Replace upgrade.
	// +optional
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

// RollingUpdate bounds a Replace upgrade, as a Deployment's does.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxSurge) || !has(self.maxUnavailable) || self.maxSurge != 0 || self.maxUnavailable != 0",message="spec.management.replace.rollingUpdate: maxSurge and maxUnavailable cannot both be 0 (nothing could be replaced)"
type RollingUpdate struct {
	// maxUnavailable is how many of the pool's nodes may be unavailable
	// (not Ready, or cordoned) at once: a number or a percentage of the
	// pool's size, rounded down. Default 0.
	//
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')",message="spec.management.replace.rollingUpdate.maxUnavailable must be a non-negative number or a percentage such as 25%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// maxSurge is how many nodes may exist beyond the pool's size while
	// nodes are replaced: a number or a percentage, rounded up. Default 1.
	//
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')",message="spec.management.replace.rollingUpdate.maxSurge must be a non-negative number or a percentage such as 25%"
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// InPlaceUpgrade configures in-place upgrades.
type InPlaceUpgrade struct {
	// maxUnavailable is how many of the pool's nodes may be drained and
	// restarted at once: a number or a percentage of the pool's size,
	// rounded down, at least 1. Default 1.
	//
	// +optional
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^[0-9]+%$')",message="spec.management.inPlace.maxUnavailable must be a positive number or a percentage such as 25%"
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
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
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'KubeVirt') == has(self.kubevirt)",message="spec.platform.kubevirt is required with spec.platform.type KubeVirt, and only with it"
// +kubebuilder:validation:XValidation:rule="(self.type == 'AWS') == has(self.aws)",message="spec.platform.aws is required with spec.platform.type AWS, and only with it"
// +kubebuilder:validation:XValidation:rule="(self.type == 'Azure') == has(self.azure)",message="spec.platform.azure is required with spec.platform.type Azure, and only with it"
type NodePoolPlatform struct {
	// type is the platform. Immutable.
	//
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.type is immutable"
	Type PlatformType `json:"type"`
	// kubevirt is each node's VirtualMachine, with type KubeVirt. A change
	// replaces the pool's machines.
	// +optional
	KubeVirt *KubeVirtNodePoolPlatform `json:"kubevirt,omitempty"`
	// aws is each node's EC2 instance, with type AWS. A change replaces
	// the pool's machines.
	// +optional
	AWS *AWSNodePoolPlatform `json:"aws,omitempty"`
	// azure is each node's virtual machine, with type Azure. A change
	// replaces the pool's machines.
	// +optional
	Azure *AzureNodePoolPlatform `json:"azure,omitempty"`
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
// +kubebuilder:validation:XValidation:rule="!(self.platform.type in ['Host', 'KubeVirt', 'AWS', 'Azure']) || !has(self.management) || !has(self.management.upgradeType) || self.management.upgradeType == 'Replace'",messageExpression="'spec.management.upgradeType InPlace is not supported on platform ' + self.platform.type + ': Cluster API replaces machines to upgrade them; use Replace'",message="spec.management.upgradeType InPlace is not supported on the platforms of Cluster API: it replaces machines to upgrade them; use Replace"
// +kubebuilder:validation:XValidation:rule="self.platform.type != 'None' || !has(self.autoScaling)",message="spec.autoScaling is not supported on platform None: its nodes are joined by hand (hypershift join) and the pool cannot add or remove them; remove spec.autoScaling"
// +kubebuilder:validation:XValidation:rule="self.platform.type != 'None' || !has(self.management) || !has(self.management.autoRepair) || !self.management.autoRepair",message="spec.management.autoRepair is not supported on platform None: the pool cannot replace nodes joined by hand; set it to false"
// +kubebuilder:validation:XValidation:rule="self.platform.type != 'None' || !has(self.management) || !has(self.management.replace)",message="spec.management.replace is not supported on platform None: nothing can create machines for nodes joined by hand; remove it, and use spec.management.upgradeType InPlace to upgrade the pool's nodes"
// +kubebuilder:validation:XValidation:rule="self.platform.type != 'None' || !has(oldSelf.kubernetesVersion) || (has(self.kubernetesVersion) && self.kubernetesVersion == oldSelf.kubernetesVersion) || (has(self.management) && has(self.management.upgradeType) && self.management.upgradeType == 'InPlace')",message="spec.kubernetesVersion cannot be changed on platform None with upgradeType Replace: nothing can create machines for nodes joined by hand; upgrade nodes in place with a pool of spec.management.upgradeType InPlace (upgradeType is immutable: create a new pool), or join nodes of the new version to a new pool"
type NodePoolSpec struct {
	// clusterName is the HostedCluster, in the same namespace, that the
	// nodes join. Immutable.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterName is immutable"
	ClusterName string `json:"clusterName"`

	// kubernetesVersion is the Kubernetes version of the pool's kubelets.
	// When empty, the NodePool controller sets it once to the control
	// plane's version (status.version of the HostedCluster, else its
	// spec), so a later control-plane upgrade does not move the nodes.
	// Changing it rolls the nodes to the new version the way
	// spec.management.upgradeType says. It may lag the control plane by
	// up to three minors and may not be newer (enforced by an admission
	// policy against the HostedCluster, and by the controller).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^v1\\\\.[0-9]+\\\\.[0-9]+$')",message="spec.kubernetesVersion must look like v1.MINOR.PATCH, e.g. v1.37.1"
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

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
	// version is the Kubernetes version every node of the pool runs; it
	// keeps the previous one while nodes run different versions.
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
	// machines are the pool's machines as their infrastructure provider
	// reports them (Cluster API's Machines: platforms Host, KubeVirt, AWS
	// and Azure), sorted by name; at most 100.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Machines []NodePoolMachine `json:"machines,omitempty"`
}

// NodePoolMachine is one machine of a pool, as its provider reports it.
type NodePoolMachine struct {
	// name of the Cluster API Machine.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// nodeName is the Node the machine registered.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	NodeName string `json:"nodeName,omitempty"`
	// providerID is the machine's ID at its provider, the Node's
	// spec.providerID.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ProviderID string `json:"providerID,omitempty"`
	// addresses the provider reports for the machine; at most 8.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Addresses []MachineAddress `json:"addresses,omitempty"`
	// ready: Cluster API reports the machine Ready.
	Ready bool `json:"ready"`
	// failure is why the machine failed, in its provider's words: a
	// terminal failure, or its infrastructure or bootstrap condition.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Failure string `json:"failure,omitempty"`
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
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".status.version"
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

// JoinVersion is the Kubernetes version a node of the pool joins at: the
// pool's, or (before the NodePool controller pinned it) its control
// plane's, hc.
func (np *NodePool) JoinVersion(hc *HostedCluster) string {
	switch {
	case np.Spec.KubernetesVersion != "":
		return np.Spec.KubernetesVersion
	case hc.Status.Version != "":
		return hc.Status.Version
	default:
		return hc.Spec.KubernetesVersion
	}
}
