package v1alpha1

// Condition types, named as HyperShift names them where the concept is the same.
const (
	// Available means the hosted control plane serves its API.
	Available = "Available"
	// Progressing means the control plane is being created or changed.
	Progressing = "Progressing"
	// Degraded means a component of the control plane is not healthy.
	Degraded = "Degraded"
	// EtcdAvailable means the hosted cluster's etcd is healthy.
	EtcdAvailable = "EtcdAvailable"
	// KubeAPIServerAvailable means the hosted kube-apiserver answers /readyz.
	KubeAPIServerAvailable = "KubeAPIServerAvailable"
	// ValidConfiguration means the spec can be acted upon.
	ValidConfiguration = "ValidConfiguration"
	// ReconciliationActive is False while spec.pausedUntil holds reconciliation.
	ReconciliationActive = "ReconciliationActive"
	// DataPlaneAvailable means the objects the control plane applies in the
	// hosted cluster (cluster DNS, the Konnectivity agent, the kubernetes
	// Service's endpoints) exist as applied and their workloads are ready.
	// It is separate from Available: a cluster without nodes serves its
	// API, while its DNS pods cannot run.
	DataPlaneAvailable = "DataPlaneAvailable"

	// NodePool condition types.

	// NodePoolReady means every requested node is Ready.
	NodePoolReady = "Ready"
	// NodePoolAllMachinesReady means every machine of the pool exists.
	NodePoolAllMachinesReady = "AllMachinesReady"
	// NodePoolAllNodesHealthy means every node of the pool reports Ready.
	NodePoolAllNodesHealthy = "AllNodesHealthy"
	// NodePoolValidPlatformConfig means the pool's platform is usable.
	NodePoolValidPlatformConfig = "ValidPlatformConfig"
)

// Condition reasons (CamelCase, as metav1.Condition requires).
const (
	AsExpectedReason             = "AsExpected"
	ReconciliationPausedReason   = "ReconciliationPaused"
	WaitingForComponentsReason   = "WaitingForComponents"
	ComponentNotReadyReason      = "ComponentNotReady"
	ComponentsReadyReason        = "ComponentsReady"
	RuntimeErrorReason           = "RuntimeError"
	InvalidConfigurationReason   = "InvalidConfiguration"
	UnsupportedReason            = "Unsupported"
	WaitingForControlPlaneReason = "WaitingForControlPlane"
	DeletingReason               = "Deleting"
	HostedClusterNotFoundReason  = "HostedClusterNotFound"
	// ControlPlaneNamespaceConflictReason: the control-plane namespace
	// NS-NAME exists and belongs to another HostedCluster (or was not made
	// by hypershift); the cluster is refused, nothing is created for it.
	ControlPlaneNamespaceConflictReason = "ControlPlaneNamespaceConflict"

	// DataPlaneAvailable reasons.

	// WaitingForKubeAPIServerReason: the hosted API server is not available
	// yet, so nothing is applied in the hosted cluster.
	WaitingForKubeAPIServerReason = "WaitingForKubeAPIServer"
	// NoNodesReason: the hosted cluster has no Ready node, so the data
	// plane's pods are Pending.
	NoNodesReason = "NoNodes"
	// DataPlaneNotReadyReason: an applied object is missing or its
	// workload has not all its replicas ready.
	DataPlaneNotReadyReason = "DataPlaneNotReady"
	// ApplyFailedReason: applying the objects to the hosted cluster failed.
	ApplyFailedReason = "ApplyFailed"
	// DataPlaneRestoredReason (an Event of the HostedControlPlane): an
	// object of the data plane was deleted or changed in the hosted cluster
	// and applied again.
	DataPlaneRestoredReason = "DataPlaneRestored"

	// NodePool reasons.

	// WaitingForHostedClusterReason: the pool's HostedCluster is not
	// Available yet.
	WaitingForHostedClusterReason = "WaitingForHostedCluster"
	// HostedClusterDeletingReason: the pool's HostedCluster is being deleted.
	HostedClusterDeletingReason = "HostedClusterDeleting"
	// HostedClusterUnreachableReason: the hosted API server does not answer.
	HostedClusterUnreachableReason = "HostedClusterUnreachable"
	// WaitingForNodesReason: machines run but have not all registered a
	// Ready node.
	WaitingForNodesReason = "WaitingForNodes"
	// ScalingDownReason: nodes are drained before their machines go.
	ScalingDownReason = "ScalingDown"
	// NodesNotReadyReason: some of the pool's nodes are not Ready.
	NodesNotReadyReason = "NodesNotReady"
	// AgentNotRunningReason: the platform cannot run the pool's machines
	// (the simulated node agent is not running).
	AgentNotRunningReason = "AgentNotRunning"
	// EnabledReason and DisabledReason say whether autoscaling or
	// autorepair is on.
	EnabledReason  = "Enabled"
	DisabledReason = "Disabled"
)

// Reasons the NodePool controller gives on the CertificateSigningRequests it
// decides in a hosted cluster (certificates.k8s.io conditions, shown by
// `kubectl get csr`).
const (
	// ServingCSRApprovedReason: a kubelet-serving CSR of a pool's node, for
	// the node's own addresses.
	ServingCSRApprovedReason = "HypershiftNodePoolApprove"
)
