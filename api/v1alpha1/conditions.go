package v1alpha1

// ConditionType is the type of a condition of a HostedCluster,
// HostedControlPlane or NodePool (metav1.Condition.Type), as Cluster API's
// clusterv1.ConditionType.
type ConditionType string

// String returns the type as metav1.Condition.Type takes it.
func (t ConditionType) String() string { return string(t) }

// ConditionReason is the reason of a condition of a HostedCluster,
// HostedControlPlane or NodePool (metav1.Condition.Reason).
type ConditionReason string

// String returns the reason as metav1.Condition.Reason takes it.
func (r ConditionReason) String() string { return string(r) }

// Condition types, named as HyperShift names them where the concept is the same.
const (
	// Available means the hosted control plane serves its API.
	Available ConditionType = "Available"
	// Progressing means the control plane is being created or changed.
	Progressing ConditionType = "Progressing"
	// Degraded means a component of the control plane is not healthy.
	Degraded ConditionType = "Degraded"
	// EtcdAvailable means the hosted cluster's etcd is healthy.
	EtcdAvailable ConditionType = "EtcdAvailable"
	// KubeAPIServerAvailable means the hosted kube-apiserver answers /readyz.
	KubeAPIServerAvailable ConditionType = "KubeAPIServerAvailable"
	// ValidConfiguration means the spec can be acted upon.
	ValidConfiguration ConditionType = "ValidConfiguration"
	// ReconciliationActive is False while spec.pausedUntil holds reconciliation.
	ReconciliationActive ConditionType = "ReconciliationActive"
	// DataPlaneAvailable means the objects the control plane applies in the
	// hosted cluster (cluster DNS, the Konnectivity agent, the kubernetes
	// Service's endpoints) exist as applied and their workloads are ready.
	// It is separate from Available: a cluster without nodes serves its
	// API, while its DNS pods cannot run.
	DataPlaneAvailable ConditionType = "DataPlaneAvailable"
	// ClusterVersionProgressing is True while the control plane rolls its
	// components to a new Kubernetes version, naming the instance being
	// rolled; False ("Running vX") once every one runs spec.kubernetesVersion.
	ClusterVersionProgressing ConditionType = "ClusterVersionProgressing"

	// NodePool condition types.

	// NodePoolReady means every requested node is Ready.
	NodePoolReady ConditionType = "Ready"
	// NodePoolAllMachinesReady means every machine of the pool exists.
	NodePoolAllMachinesReady ConditionType = "AllMachinesReady"
	// NodePoolAllNodesHealthy means every node of the pool reports Ready.
	NodePoolAllNodesHealthy ConditionType = "AllNodesHealthy"
	// NodePoolValidPlatformConfig means the pool's platform is usable.
	NodePoolValidPlatformConfig ConditionType = "ValidPlatformConfig"

	// JoinConfigReady means the machine's userdata Secret is made
	// (JoinConfig; Cluster API mirrors it as the Machine's
	// BootstrapConfigReady).
	JoinConfigReady ConditionType = "Ready"
)

// Condition reasons (CamelCase, as metav1.Condition requires).
const (
	AsExpectedReason             ConditionReason = "AsExpected"
	ReconciliationPausedReason   ConditionReason = "ReconciliationPaused"
	WaitingForComponentsReason   ConditionReason = "WaitingForComponents"
	ComponentNotReadyReason      ConditionReason = "ComponentNotReady"
	ComponentsReadyReason        ConditionReason = "ComponentsReady"
	RuntimeErrorReason           ConditionReason = "RuntimeError"
	InvalidConfigurationReason   ConditionReason = "InvalidConfiguration"
	UnsupportedReason            ConditionReason = "Unsupported"
	WaitingForControlPlaneReason ConditionReason = "WaitingForControlPlane"
	DeletingReason               ConditionReason = "Deleting"
	HostedClusterNotFoundReason  ConditionReason = "HostedClusterNotFound"
	// ControlPlaneNamespaceConflictReason: the control-plane namespace
	// NS-NAME exists and belongs to another HostedCluster (or was not made
	// by hypershift); the cluster is refused, nothing is created for it.
	ControlPlaneNamespaceConflictReason ConditionReason = "ControlPlaneNamespaceConflict"

	// DataPlaneAvailable reasons.

	// WaitingForKubeAPIServerReason: the hosted API server is not available
	// yet, so nothing is applied in the hosted cluster.
	WaitingForKubeAPIServerReason ConditionReason = "WaitingForKubeAPIServer"
	// NoNodesReason: the hosted cluster has no Ready node, so the data
	// plane's pods are Pending.
	NoNodesReason ConditionReason = "NoNodes"
	// DataPlaneNotReadyReason: an applied object is missing or its
	// workload has not all its replicas ready.
	DataPlaneNotReadyReason ConditionReason = "DataPlaneNotReady"
	// ApplyFailedReason: applying the objects to the hosted cluster failed.
	ApplyFailedReason ConditionReason = "ApplyFailed"

	// ClusterVersionProgressing reasons.

	// UpgradingReason: the control plane's components are being rolled to
	// a new version.
	UpgradingReason ConditionReason = "Upgrading"
	// InstallingReason: the control plane's components start at its first
	// version (a creation, not an upgrade).
	InstallingReason ConditionReason = "Installing"

	// NodePool reasons.

	// WaitingForHostedClusterReason: the pool's HostedCluster is not
	// Available yet.
	WaitingForHostedClusterReason ConditionReason = "WaitingForHostedCluster"
	// WaitingForMachineReason: a JoinConfig waits for the Machine it is
	// for to own it.
	WaitingForMachineReason ConditionReason = "WaitingForMachine"
	// DataSecretCreatedReason: a JoinConfig's userdata Secret is made.
	DataSecretCreatedReason ConditionReason = "DataSecretCreated"
	// InvalidJoinConfigReason: a JoinConfig names no Cluster, a Cluster
	// whose control plane is not a HostedControlPlane, or a NodePool that
	// is not of that cluster; fixing the object brings it back.
	InvalidJoinConfigReason ConditionReason = "InvalidJoinConfig"
	// HostedClusterDeletingReason: the pool's HostedCluster is being deleted.
	HostedClusterDeletingReason ConditionReason = "HostedClusterDeleting"
	// HostedClusterUnreachableReason: the hosted API server does not answer.
	HostedClusterUnreachableReason ConditionReason = "HostedClusterUnreachable"
	// WaitingForNodesReason: machines run but have not all registered a
	// Ready node.
	WaitingForNodesReason ConditionReason = "WaitingForNodes"
	// ScalingDownReason: nodes are drained before their machines go.
	ScalingDownReason ConditionReason = "ScalingDown"
	// NodesNotReadyReason: some of the pool's nodes are not Ready.
	NodesNotReadyReason ConditionReason = "NodesNotReady"
	// AgentNotRunningReason: the platform cannot run the pool's machines
	// (the simulated node agent is not running).
	AgentNotRunningReason ConditionReason = "AgentNotRunning"
	// EnabledReason and DisabledReason say whether autoscaling or
	// autorepair is on.
	EnabledReason  ConditionReason = "Enabled"
	DisabledReason ConditionReason = "Disabled"
	// RollingOutReason (UpdatingVersion True): nodes are being moved to
	// the pool's version.
	RollingOutReason ConditionReason = "RollingOut"
	// UnsupportedVersionSkewReason (UpdatingVersion False): the pool's
	// version is newer than the control plane's, or more than three
	// minors older; the nodes keep the version they run.
	UnsupportedVersionSkewReason ConditionReason = "UnsupportedVersionSkew"
)

// Event reasons (not condition reasons: an Event's reason is a plain string).
const (
	// DataPlaneRestoredReason (an Event of the HostedControlPlane): an
	// object of the data plane was deleted or changed in the hosted cluster
	// and applied again.
	DataPlaneRestoredReason = "DataPlaneRestored"
	// UpgradeStartedReason and UpgradeCompletedReason (Events of the
	// HostedControlPlane and HostedCluster): a rollout to a new Kubernetes
	// version began, and reached every versioned component.
	UpgradeStartedReason   = "UpgradeStarted"
	UpgradeCompletedReason = "UpgradeCompleted"
)

// Reasons the NodePool controller gives on the CertificateSigningRequests it
// decides in a hosted cluster (certificates.k8s.io conditions, shown by
// `kubectl get csr`).
const (
	// ServingCSRApprovedReason: a kubelet-serving CSR of a pool's node, for
	// the node's own addresses.
	ServingCSRApprovedReason = "HypershiftNodePoolApprove"
)
