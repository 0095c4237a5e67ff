package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePoolsAnnotation on a HostedControlPlane says that its HostedCluster
// has NodePools ("true"); the HostedCluster controller sets it. A control
// plane starts its scheduler once its cluster has a NodePool or a node.
const NodePoolsAnnotation = "hypershift.dev/node-pools"

// HostedControlPlaneSpec is the control plane of one hosted cluster, as the
// HostedCluster controller asks for it. It lives in the control-plane
// namespace NAMESPACE-NAME.
type HostedControlPlaneSpec struct {
	// kubernetesVersion is the version of the control-plane components.
	KubernetesVersion string `json:"kubernetesVersion"`

	// networking holds the cluster's network ranges.
	Networking ClusterNetworking `json:"networking"`

	// controllerAvailabilityPolicy is the replication of components.
	// +optional
	ControllerAvailabilityPolicy AvailabilityPolicy `json:"controllerAvailabilityPolicy,omitempty"`

	// etcd configures the datastore.
	Etcd EtcdSpec `json:"etcd"`

	// platform of the hosted cluster.
	Platform PlatformSpec `json:"platform"`

	// services mirrors the HostedCluster's: how the API server and the
	// Konnectivity server are published.
	// +optional
	// +listType=map
	// +listMapKey=service
	// +kubebuilder:validation:MaxItems=8
	Services []ServicePublishingStrategyMapping `json:"services,omitempty"`

	// pausedUntil mirrors the HostedCluster's.
	// +optional
	PausedUntil *string `json:"pausedUntil,omitempty"`

	// hibernation is the HostedCluster controller's decision: whether the
	// control plane sleeps now, and whether it sleeps when idle.
	// +optional
	Hibernation *ControlPlaneHibernation `json:"hibernation,omitempty"`

	// issuerURL mirrors the HostedCluster's: the issuer of service-account
	// tokens; empty is https://kubernetes.default.svc.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	IssuerURL string `json:"issuerURL,omitempty"`

	// workloadIdentityWebhook mirrors the HostedCluster's.
	// +optional
	WorkloadIdentityWebhook *WorkloadIdentityWebhookSpec `json:"workloadIdentityWebhook,omitempty"`
}

// ComponentPhase is the state of one control-plane component.
type ComponentPhase string

const (
	// ComponentStarting means the process runs but is not ready yet.
	ComponentStarting ComponentPhase = "Starting"
	// ComponentRunning means the process runs and its readiness probe passes.
	ComponentRunning ComponentPhase = "Running"
	// ComponentUnhealthy means the process runs but its probe fails.
	ComponentUnhealthy ComponentPhase = "Unhealthy"
	// ComponentBackOff means the process exited and waits to be restarted.
	ComponentBackOff ComponentPhase = "BackOff"
	// ComponentStopped means the process is not running.
	ComponentStopped ComponentPhase = "Stopped"
)

// ComponentStatus is the observed state of one control-plane component
// instance.
type ComponentStatus struct {
	// name of the component instance, e.g. kube-apiserver or etcd-1.
	Name string `json:"name"`
	// component the instance runs: etcd, kube-apiserver, …
	// +optional
	Component string `json:"component,omitempty"`
	// phase is the component's state.
	Phase ComponentPhase `json:"phase"`
	// pid of the process, for the process runtime.
	// +optional
	PID int32 `json:"pid,omitempty"`
	// restarts counts how often the component was restarted.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// lastExitReason says why the component last exited.
	// +optional
	LastExitReason string `json:"lastExitReason,omitempty"`
	// message adds detail, such as a failing probe's error.
	// +optional
	Message string `json:"message,omitempty"`
	// startedAt is when the current process started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// version is the Kubernetes version the running instance was started
	// from; empty for components that are not versioned (etcd,
	// Konnectivity, the endpoint proxy).
	// +optional
	Version string `json:"version,omitempty"`
}

// HostedControlPlaneStatus is the observed state of a control plane.
type HostedControlPlaneStatus struct {
	// ready is true when the API server answers /readyz.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// version is the Kubernetes version the control plane runs: the
	// newest one every versioned component was rolled out to.
	// +optional
	Version string `json:"version,omitempty"`
	// versionHistory lists the versions the control plane was rolled out
	// to, newest first: the one being rolled out is Partial until every
	// component runs it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	VersionHistory []VersionHistory `json:"versionHistory,omitempty"`
	// controlPlaneEndpoint is where the API server is reached.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitzero"`
	// etcdClientURLs are the client URLs of the etcd members, where the
	// operator reaches them (backups, metrics), as the runtime allocated
	// them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	EtcdClientURLs []string `json:"etcdClientURLs,omitempty"`
	// startQueue is set while the control plane waits for its turn to
	// start.
	// +optional
	StartQueue *StartQueueStatus `json:"startQueue,omitempty"`
	// components lists each component's state.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []ComponentStatus `json:"components,omitempty"`
	// dataPlane lists the objects the control plane applies in the hosted
	// cluster (cluster DNS, the Konnectivity agent, the kubernetes
	// Service's endpoints, RBAC) and their health.
	// +optional
	// +listType=atomic
	DataPlane []DataPlaneObjectStatus `json:"dataPlane,omitempty"`
	// activity is what the endpoint proxy saw of clients, when the
	// cluster hibernates when idle.
	// +optional
	Activity *ControlPlaneActivity `json:"activity,omitempty"`
	// externalManagedControlPlane is true: the control plane runs as
	// workloads of the management plane, on no Machine of the cluster's
	// (Cluster API's control-plane contract: its Machine controller then
	// looks for no control-plane Nodes).
	// +optional
	ExternalManagedControlPlane *bool `json:"externalManagedControlPlane,omitempty"`
	// initialization says when the control plane first served (Cluster
	// API's control-plane contract).
	// +optional
	Initialization ControlPlaneInitialization `json:"initialization,omitzero"`
	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions describe the control plane's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ControlPlaneInitialization is Cluster API's control-plane
// initialization: what it waits for before it bootstraps worker Machines.
type ControlPlaneInitialization struct {
	// controlPlaneInitialized is true once the API server first served
	// (the control plane was Available); it is never set back, as Cluster
	// API requires.
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// DataPlaneObjectStatus is the state of one object the control plane
// applies in the hosted cluster.
type DataPlaneObjectStatus struct {
	// kind is the object's kind, e.g. Deployment.
	Kind string `json:"kind"`
	// namespace is empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name is the object's name.
	Name string `json:"name"`
	// ready counts ready replicas of workloads, e.g. "2/2"; empty for
	// other objects.
	// +optional
	Ready string `json:"ready,omitempty"`
	// healthy is true when the object exists as applied and, for a
	// workload, all its replicas are ready.
	Healthy bool `json:"healthy"`
	// message says what is missing when the object is not healthy.
	// +optional
	Message string `json:"message,omitempty"`
}

// HostedControlPlane is the control plane of one hosted cluster. It is
// created and owned by the HostedCluster controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=hcp;hcps,categories=hypershift
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=".status.version"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=".status.ready"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type HostedControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HostedControlPlaneSpec   `json:"spec,omitempty"`
	Status HostedControlPlaneStatus `json:"status,omitempty"`
}

// HostedControlPlaneList is a list of HostedControlPlanes.
//
// +kubebuilder:object:root=true
type HostedControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HostedControlPlane `json:"items"`
}
