package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// +kubebuilder:validation:Enum=None;Simulated;Host;KubeVirt;AWS;Azure
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
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'KubeVirt') == has(self.kubevirt)",message="spec.platform.kubevirt is required with spec.platform.type KubeVirt, and only with it"
// +kubebuilder:validation:XValidation:rule="(self.type == 'AWS') == has(self.aws)",message="spec.platform.aws is required with spec.platform.type AWS, and only with it"
// +kubebuilder:validation:XValidation:rule="(self.type == 'Azure') == has(self.azure)",message="spec.platform.azure is required with spec.platform.type Azure, and only with it"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.kubevirt) || has(oldSelf.kubevirt.credentials) == (has(self.kubevirt) && has(self.kubevirt.credentials))",message="spec.platform.kubevirt.credentials can be neither set nor removed after creation: the VirtualMachines live on the infrastructure cluster chosen then"
// +kubebuilder:validation:XValidation:rule="!has(self.host) || self.type == 'Host'",message="spec.platform.host is only for spec.platform.type Host"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.host) && has(oldSelf.host.storageDriver)) == (has(self.host) && has(self.host.storageDriver))",message="spec.platform.host.storageDriver can be neither set nor removed after creation: the hosted cluster's StorageClasses are made from it once"
type PlatformSpec struct {
	// type is the platform the cluster's nodes run on. Immutable.
	//
	// +kubebuilder:default=None
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.type is immutable"
	Type PlatformType `json:"type,omitempty"`
	// kubevirt is the KubeVirt infrastructure, with type KubeVirt.
	// +optional
	KubeVirt *KubeVirtPlatformSpec `json:"kubevirt,omitempty"`
	// aws is the AWS infrastructure, with type AWS.
	// +optional
	AWS *AWSPlatformSpec `json:"aws,omitempty"`
	// azure is the Azure infrastructure, with type Azure.
	// +optional
	Azure *AzurePlatformSpec `json:"azure,omitempty"`
	// host configures platform Host.
	// +optional
	Host *HostPlatformSpec `json:"host,omitempty"`
}

// EtcdSpec configures a hosted cluster's etcd.
type EtcdSpec struct {
	// managementType says who runs etcd. Immutable.
	//
	// +kubebuilder:default=Managed
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.etcd.managementType is immutable"
	ManagementType EtcdManagementType `json:"managementType,omitempty"`

	// managed configures the etcd hypershift runs: its storage, for the
	// kube runtime. Immutable (a StatefulSet's volume claims are).
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.etcd.managed is immutable: the members' volumes are made at creation"
	Managed *ManagedEtcdSpec `json:"managed,omitempty"`
}

// ManagedEtcdSpec configures a managed etcd.
type ManagedEtcdSpec struct {
	// storage is where each member keeps its data.
	Storage ManagedEtcdStorageSpec `json:"storage"`
}

// EtcdStorageType is the kind of storage of a managed etcd.
//
// +kubebuilder:validation:Enum=PersistentVolume
type EtcdStorageType string

// PersistentVolumeEtcdStorage keeps each member's data on a
// PersistentVolumeClaim.
const PersistentVolumeEtcdStorage EtcdStorageType = "PersistentVolume"

// ManagedEtcdStorageSpec is a managed etcd's storage.
type ManagedEtcdStorageSpec struct {
	// type is the kind of storage: PersistentVolume.
	//
	// +kubebuilder:default=PersistentVolume
	// +optional
	Type EtcdStorageType `json:"type,omitempty"`
	// persistentVolume configures each member's claim.
	//
	// +optional
	PersistentVolume *PersistentVolumeEtcdStorageSpec `json:"persistentVolume,omitempty"`
}

// PersistentVolumeEtcdStorageSpec is each etcd member's claim.
type PersistentVolumeEtcdStorageSpec struct {
	// storageClassName of the claims; unset uses the operator's
	// --etcd-storage-class, else the cluster's default class.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
	// size of each member's claim; unset uses the operator's
	// --etcd-storage-size (8Gi).
	//
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
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

// HostedClusterSpec is the desired state of a hosted cluster.
//
// +kubebuilder:validation:XValidation:rule="has(self.issuerURL) == has(oldSelf.issuerURL)",message="spec.issuerURL is immutable: it can be neither set nor removed after creation"
// +kubebuilder:validation:XValidation:rule="has(self.serviceAccountSigningKey) == has(oldSelf.serviceAccountSigningKey)",message="spec.serviceAccountSigningKey is immutable: it can be neither set nor removed after creation"
// +kubebuilder:validation:XValidation:rule="has(self.oidcPublishing) == has(oldSelf.oidcPublishing)",message="spec.oidcPublishing can be neither set nor removed after creation: the documents' place is decided with the issuer"
// +kubebuilder:validation:XValidation:rule="has(self.workloadIdentityWebhook) == has(oldSelf.workloadIdentityWebhook)",message="spec.workloadIdentityWebhook can be neither set nor removed after creation: pods are admitted through the webhook while it is registered"
// +kubebuilder:validation:XValidation:rule="!has(self.oidcPublishing) || has(self.issuerURL)",message="spec.oidcPublishing needs spec.issuerURL: the documents name the issuer they are served at"
type HostedClusterSpec struct {
	// kubernetesVersion is the Kubernetes version of the hosted control
	// plane; empty runs the version compiled into the operator. Which
	// versions an installation can run is checked by its runtime admission
	// policy (the releases `hypershift version` lists). Changing it
	// upgrades the control plane: one minor at a time, never a minor
	// downgrade (docs/upgrades.md).
	//
	// The messages name the next minor through a literal list: string(int)
	// has an unbounded estimated size, which the CRD's cost limit refuses.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^v1\\\\.[0-9]+\\\\.[0-9]+$')",message="spec.kubernetesVersion must be a Kubernetes version vMAJOR.MINOR.PATCH, such as v1.37.1"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^v1\\\\.[0-9]+\\\\.[0-9]+$') || !oldSelf.matches('^v1\\\\.[0-9]+\\\\.[0-9]+$') || int(self.substring(3, self.lastIndexOf('.'))) >= int(oldSelf.substring(3, oldSelf.lastIndexOf('.')))",messageExpression="'spec.kubernetesVersion: ' + self + ' would downgrade the control plane from ' + oldSelf + ' to an older minor, which is not supported: use v1.' + oldSelf.substring(3, oldSelf.lastIndexOf('.')) + '.x or v1.' + (int(oldSelf.substring(3, oldSelf.lastIndexOf('.'))) < 99 ? ['0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32','33','34','35','36','37','38','39','40','41','42','43','44','45','46','47','48','49','50','51','52','53','54','55','56','57','58','59','60','61','62','63','64','65','66','67','68','69','70','71','72','73','74','75','76','77','78','79','80','81','82','83','84','85','86','87','88','89','90','91','92','93','94','95','96','97','98','99'][int(oldSelf.substring(3, oldSelf.lastIndexOf('.'))) + 1] : 'next') + '.x'",message="spec.kubernetesVersion: a minor downgrade is not supported"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^v1\\\\.[0-9]+\\\\.[0-9]+$') || !oldSelf.matches('^v1\\\\.[0-9]+\\\\.[0-9]+$') || int(self.substring(3, self.lastIndexOf('.'))) <= int(oldSelf.substring(3, oldSelf.lastIndexOf('.'))) + 1",messageExpression="'spec.kubernetesVersion: ' + self + ' skips a minor version from ' + oldSelf + ', which is not supported: upgrade one minor at a time, use v1.' + oldSelf.substring(3, oldSelf.lastIndexOf('.')) + '.x or v1.' + (int(oldSelf.substring(3, oldSelf.lastIndexOf('.'))) < 99 ? ['0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16','17','18','19','20','21','22','23','24','25','26','27','28','29','30','31','32','33','34','35','36','37','38','39','40','41','42','43','44','45','46','47','48','49','50','51','52','53','54','55','56','57','58','59','60','61','62','63','64','65','66','67','68','69','70','71','72','73','74','75','76','77','78','79','80','81','82','83','84','85','86','87','88','89','90','91','92','93','94','95','96','97','98','99'][int(oldSelf.substring(3, oldSelf.lastIndexOf('.'))) + 1] : 'next') + '.x'",message="spec.kubernetesVersion: upgrade one minor version at a time"
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

	// services says how control-plane services are published: the API
	// server and the Konnectivity server (which follows the API server
	// when not listed). HostPort when the list is empty.
	//
	// Immutable: the serving certificates name the published addresses,
	// and are made at creation.
	//
	// +optional
	// +listType=map
	// +listMapKey=service
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.services is immutable: the serving certificates name the published addresses at creation; create a new cluster to publish it elsewhere"
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

	// hibernation stops the control plane now, on a schedule, or when it
	// is idle, keeping its data (docs/hibernation.md).
	//
	// +optional
	Hibernation *HibernationSpec `json:"hibernation,omitempty"`

	// backup runs backups on a schedule, keeping the newest (docs/backup.md).
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// certificates asks for certificate operations such as a root-CA
	// rotation (docs/security.md).
	//
	// +optional
	Certificates *CertificatesSpec `json:"certificates,omitempty"`

	// issuerURL is the issuer of the cluster's service-account tokens
	// (the API server's --service-account-issuer), where relying parties
	// fetch ISSUER/.well-known/openid-configuration: an https URL without
	// query, fragment or trailing slash. Empty: https://kubernetes.default.svc,
	// whose documents the cluster's own pods reach in-cluster. Immutable:
	// every token issued names it, and cloud identities trust it by name
	// (docs/workload-identity.md).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.issuerURL is immutable: tokens and the cloud identities that trust them name it; create a new cluster for another issuer"
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https' && url(self).getHostname() != '' && size(url(self).getQuery()) == 0 && !self.contains('#') && !self.contains('@') && !self.endsWith('/')",message="spec.issuerURL must be an https URL with a host and without query, fragment, user or trailing slash, such as https://oidc.example.com/clusters/prod"
	IssuerURL string `json:"issuerURL,omitempty"`

	// serviceAccountSigningKey names a Secret in the HostedCluster's
	// namespace whose "key" holds the PEM private key the API server signs
	// service-account tokens with (RSA of at least 2048 bits, or ECDSA
	// P-256 or P-384): a cluster recreated or migrated with the same key and
	// issuer keeps the trust cloud identities hold. Empty: the operator
	// makes a key. Read when the cluster's PKI is made; immutable.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.serviceAccountSigningKey is immutable: it is read when the cluster's PKI is made"
	ServiceAccountSigningKey *corev1.LocalObjectReference `json:"serviceAccountSigningKey,omitempty"`

	// oidcPublishing publishes the issuer's discovery document and key
	// set to object storage (docs/workload-identity.md). Needs issuerURL.
	//
	// +optional
	OIDCPublishing *OIDCPublishingSpec `json:"oidcPublishing,omitempty"`

	// workloadIdentityWebhook runs the webhook that gives pods of
	// ServiceAccounts annotated the Azure or the AWS way a projected
	// token and the environment their SDKs exchange for cloud credentials
	// (docs/workload-identity.md). Set at creation only: the cluster's
	// pods are admitted through it while it is registered.
	//
	// +optional
	WorkloadIdentityWebhook *WorkloadIdentityWebhookSpec `json:"workloadIdentityWebhook,omitempty"`
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
	// version is the Kubernetes version the control plane runs: the
	// newest one it rolled out completely (mirrored from the
	// HostedControlPlane).
	// +optional
	Version string `json:"version,omitempty"`

	// versionHistory lists the versions the control plane was rolled out
	// to, newest first (mirrored from the HostedControlPlane).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	VersionHistory []VersionHistory `json:"versionHistory,omitempty"`

	// controlPlaneEndpoint is where the hosted API server is reached.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitzero"`

	// endpoint is the hosted API server's URL.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// startQueue is set while the control plane waits for its turn to
	// start (the HostedControlPlane's).
	// +optional
	StartQueue *StartQueueStatus `json:"startQueue,omitempty"`

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

	// backup reports the cluster's backups.
	// +optional
	Backup *BackupStatus `json:"backup,omitempty"`

	// conditions describe the cluster's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// certificates are the cluster's CAs and its root-CA rotation.
	// +optional
	Certificates *CertificatesStatus `json:"certificates,omitempty"`

	// serviceAccountIssuer is the cluster's token issuer and the key ids
	// published for it.
	// +optional
	ServiceAccountIssuer *ServiceAccountIssuerStatus `json:"serviceAccountIssuer,omitempty"`
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
// +kubebuilder:printcolumn:name="Hibernated",type=string,JSONPath=".status.conditions[?(@.type==\"Hibernated\")].reason",priority=0
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
