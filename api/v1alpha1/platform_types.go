package v1alpha1

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Platforms whose machines are made by a Cluster API infrastructure
// provider the user installs (docs/platforms.md): hypershift renders the
// provider's infrastructure cluster and machine template, and its
// bootstrap userdata; the provider's controllers make the machines.
const (
	// KubeVirtPlatform: nodes are KubeVirt VirtualMachines, made by
	// cluster-api-provider-kubevirt on the management cluster or on
	// another infrastructure cluster.
	KubeVirtPlatform PlatformType = "KubeVirt"
	// AWSPlatform: nodes are EC2 instances, made by
	// cluster-api-provider-aws.
	AWSPlatform PlatformType = "AWS"
	// AzurePlatform: nodes are Azure virtual machines, made by
	// cluster-api-provider-azure.
	AzurePlatform PlatformType = "Azure"
)

// KubeVirtPlatformSpec is a hosted cluster's KubeVirt infrastructure.
type KubeVirtPlatformSpec struct {
	// credentials name another cluster that runs the VirtualMachines
	// (an external infrastructure cluster); without them they run in the
	// control-plane namespace of the management cluster.
	// +optional
	Credentials *KubeVirtPlatformCredentials `json:"credentials,omitempty"`
}

// KubeVirtPlatformCredentials name an external infrastructure cluster.
type KubeVirtPlatformCredentials struct {
	// infraKubeConfigSecret is a Secret of the HostedCluster's namespace
	// holding a kubeconfig of the infrastructure cluster, with inline
	// credentials only (no exec plugin, auth provider or file): the
	// provider reaches that cluster with it.
	InfraKubeConfigSecret KubeconfigSecretRef `json:"infraKubeConfigSecret"`
	// infraNamespace is the namespace of the infrastructure cluster the
	// VirtualMachines are made in. Immutable.
	//
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.platform.kubevirt.credentials.infraNamespace must be a namespace name (a DNS-1123 label)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.kubevirt.credentials.infraNamespace is immutable: the cluster's VirtualMachines live there"
	InfraNamespace string `json:"infraNamespace"`
}

// AWSPlatformSpec is a hosted cluster's AWS infrastructure: the VPC its
// nodes run in, which the user made (hypershift makes no network).
type AWSPlatformSpec struct {
	// region of the VPC, such as us-east-1. Immutable.
	//
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]{2}(-[a-z]+)+-[0-9]+$')",message="spec.platform.aws.region must be an AWS region such as us-east-1"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.aws.region is immutable"
	Region string `json:"region"`
	// vpc is the ID of the VPC the nodes run in, such as
	// vpc-0123456789abcdef0. Immutable.
	//
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^vpc-[0-9a-f]{8,17}$')",message="spec.platform.aws.vpc must be a VPC ID such as vpc-0123456789abcdef0"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.aws.vpc is immutable"
	VPC string `json:"vpc"`
	// credentialsSecret is a Secret of the HostedCluster's namespace with
	// the keys AccessKeyID and SecretAccessKey (and SessionToken when the
	// keys are temporary): the provider makes this cluster's instances
	// with them, through an AWSClusterStaticIdentity of this cluster only.
	CredentialsSecret SecretReference `json:"credentialsSecret"`
	// resourceTags are put on every AWS resource made for the cluster.
	// +optional
	// +kubebuilder:validation:MaxItems=25
	// +listType=map
	// +listMapKey=key
	ResourceTags []AWSResourceTag `json:"resourceTags,omitempty"`
}

// AWSResourceTag is a tag of AWS resources.
type AWSResourceTag struct {
	// key of the tag; the prefix aws: is AWS's own.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('aws:')",message="a resource tag key must not begin with aws:, which AWS reserves"
	Key string `json:"key"`
	// value of the tag.
	//
	// +kubebuilder:validation:MaxLength=256
	Value string `json:"value"`
}

// AzurePlatformSpec is a hosted cluster's Azure infrastructure: the
// resource group and virtual network its nodes run in, which the user
// made.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf || (self.location == oldSelf.location && self.subscriptionID == oldSelf.subscriptionID && self.resourceGroup == oldSelf.resourceGroup && self.vnetID == oldSelf.vnetID)",message="spec.platform.azure: location, subscriptionID, resourceGroup and vnetID are immutable"
// +kubebuilder:validation:XValidation:rule="self.vnetID.lowerAscii().startsWith('/subscriptions/' + self.subscriptionID.lowerAscii() + '/')",message="spec.platform.azure.vnetID must be in spec.platform.azure.subscriptionID: the provider names the nodes' subnets under it"
type AzurePlatformSpec struct {
	// cloud is the Azure cloud.
	//
	// +kubebuilder:default=AzurePublicCloud
	// +kubebuilder:validation:Enum=AzurePublicCloud;AzureUSGovernmentCloud;AzureChinaCloud
	// +optional
	Cloud string `json:"cloud,omitempty"`
	// location is the Azure region, such as eastus.
	//
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z][a-z0-9]+$')",message="spec.platform.azure.location must be an Azure region name such as eastus"
	Location string `json:"location"`
	// subscriptionID is the subscription of the resource group.
	//
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$')",message="spec.platform.azure.subscriptionID must be a subscription ID (a UUID)"
	SubscriptionID string `json:"subscriptionID"`
	// resourceGroup the nodes' virtual machines are made in.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-_.()a-zA-Z0-9]*[-_()a-zA-Z0-9]$')",message="spec.platform.azure.resourceGroup must be a resource group name: letters, digits, '-', '_', '.', '(' and ')', not ending in '.'"
	ResourceGroup string `json:"resourceGroup"`
	// vnetID is the resource ID of the virtual network the nodes' subnets
	// belong to:
	// /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/NAME.
	//
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.Network/virtualNetworks/[^/]+$')",message="spec.platform.azure.vnetID must be a virtual network's resource ID: /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/NAME"
	VnetID string `json:"vnetID"`
	// credentialsSecret is a Secret of the HostedCluster's namespace with
	// a service principal's AZURE_CLIENT_ID, AZURE_TENANT_ID and
	// AZURE_CLIENT_SECRET: the provider makes this cluster's virtual
	// machines with it, through an AzureClusterIdentity of this cluster
	// only.
	CredentialsSecret SecretReference `json:"credentialsSecret"`
}

// KubeVirtNodePoolPlatform is the VirtualMachine of each node of a pool.
type KubeVirtNodePoolPlatform struct {
	// compute is the VirtualMachine's processors and memory.
	//
	// +kubebuilder:default={cores: 2, memory: "8Gi"}
	// +optional
	Compute KubeVirtCompute `json:"compute,omitzero"`
	// rootVolume is the disk the VirtualMachine boots from.
	RootVolume KubeVirtRootVolume `json:"rootVolume"`
	// additionalNetworks are Multus NetworkAttachmentDefinitions of the
	// infrastructure cluster (NAMESPACE/NAME) the VirtualMachine is also
	// attached to.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=8
	AdditionalNetworks []KubeVirtNetwork `json:"additionalNetworks,omitempty"`
	// attachDefaultNetwork attaches the VirtualMachine to the pod network
	// of the infrastructure cluster; default true. Without it the pool
	// needs an additional network.
	// +optional
	AttachDefaultNetwork *bool `json:"attachDefaultNetwork,omitempty"`
}

// KubeVirtCompute is a VirtualMachine's processors and memory.
type KubeVirtCompute struct {
	// cores of the VirtualMachine's processor.
	//
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	Cores int32 `json:"cores,omitempty"`
	// memory of the VirtualMachine; at least 1Gi (the NodePool controller
	// refuses less, in ValidPlatformConfig).
	//
	// +kubebuilder:default="8Gi"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// KubeVirtRootVolume is the disk a VirtualMachine boots from: a container
// disk image (a node image with hypershift and cloud-init), copied to a
// persistent volume of the infrastructure cluster when persistent is set.
type KubeVirtRootVolume struct {
	// diskImage is the image booted.
	DiskImage KubeVirtDiskImage `json:"diskImage"`
	// persistent copies the image to a volume (a DataVolume) that lives
	// as long as the machine; without it the disk is ephemeral.
	// +optional
	Persistent *KubeVirtPersistentVolume `json:"persistent,omitempty"`
}

// KubeVirtDiskImage is a container disk image.
type KubeVirtDiskImage struct {
	// containerDiskImage is the image reference, such as
	// registry.example.com/nodes/debian:13.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.contains(' ') && !self.startsWith('-')",message="spec.platform.kubevirt.rootVolume.diskImage.containerDiskImage must be an image reference"
	ContainerDiskImage string `json:"containerDiskImage"`
}

// KubeVirtPersistentVolume is a root volume's size and class.
type KubeVirtPersistentVolume struct {
	// size of the volume; default 32Gi.
	//
	// +kubebuilder:default="32Gi"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// storageClass of the infrastructure cluster; default: its default.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClass string `json:"storageClass,omitempty"`
}

// KubeVirtNetwork is a NetworkAttachmentDefinition of the infrastructure
// cluster.
type KubeVirtNetwork struct {
	// name is NAMESPACE/NAME of the NetworkAttachmentDefinition.
	//
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.platform.kubevirt.additionalNetworks[].name must be NAMESPACE/NAME of a NetworkAttachmentDefinition"
	Name string `json:"name"`
}

// AWSNodePoolPlatform is the EC2 instance of each node of a pool.
type AWSNodePoolPlatform struct {
	// instanceType is the EC2 instance type, such as m6i.large.
	//
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\\\\.[a-z0-9]+$')",message="spec.platform.aws.instanceType must be an EC2 instance type such as m6i.large"
	InstanceType string `json:"instanceType"`
	// ami is the image the instances boot: a node image with hypershift
	// and cloud-init, such as ami-0123456789abcdef0.
	//
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^ami-[0-9a-f]{8,17}$')",message="spec.platform.aws.ami must be an AMI ID such as ami-0123456789abcdef0"
	AMI string `json:"ami"`
	// subnet the instances run in.
	//
	// +kubebuilder:validation:XValidation:rule="self.id.startsWith('subnet-')",message="spec.platform.aws.subnet.id must be a subnet ID such as subnet-0123456789abcdef0"
	Subnet AWSResourceReference `json:"subnet"`
	// securityGroups added to the instances.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(g, g.id.startsWith('sg-'))",message="spec.platform.aws.securityGroups[].id must be a security group ID such as sg-0123456789abcdef0"
	SecurityGroups []AWSResourceReference `json:"securityGroups,omitempty"`
	// instanceProfile is the IAM instance profile of the instances.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[\\\\w+=,.@-]+$')",message="spec.platform.aws.instanceProfile must be an IAM instance profile name"
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// rootVolume is the instances' root EBS volume.
	//
	// +kubebuilder:default={size: 120, type: gp3}
	// +optional
	RootVolume AWSVolume `json:"rootVolume,omitzero"`
	// resourceTags are put on the instances, besides the cluster's.
	// +optional
	// +kubebuilder:validation:MaxItems=25
	// +listType=map
	// +listMapKey=key
	ResourceTags []AWSResourceTag `json:"resourceTags,omitempty"`
}

// AWSResourceReference names an AWS resource by ID.
type AWSResourceReference struct {
	// id of the resource, such as subnet-0123456789abcdef0 or
	// sg-0123456789abcdef0.
	//
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^(subnet|sg)-[0-9a-f]{8,17}$')",message="an AWS resource id must be a subnet or security group ID such as subnet-0123456789abcdef0"
	ID string `json:"id"`
}

// AWSVolume is an EBS volume.
//
// +kubebuilder:validation:XValidation:rule="!has(self.iops) || (has(self.type) && self.type in ['io1', 'io2', 'gp3'])",message="spec.platform.aws.rootVolume.iops is for volumes of type io1, io2 or gp3"
// +kubebuilder:validation:XValidation:rule="!has(self.type) || !(self.type in ['io1', 'io2']) || has(self.iops)",message="spec.platform.aws.rootVolume: a volume of type io1 or io2 needs iops"
type AWSVolume struct {
	// size in GiB.
	//
	// +kubebuilder:default=120
	// +kubebuilder:validation:Minimum=8
	// +kubebuilder:validation:Maximum=16384
	// +optional
	Size int64 `json:"size,omitempty"`
	// type of the volume.
	//
	// +kubebuilder:default=gp3
	// +kubebuilder:validation:Enum=gp2;gp3;io1;io2;standard
	// +optional
	Type string `json:"type,omitempty"`
	// iops of an io1, io2 or gp3 volume.
	//
	// +optional
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=256000
	IOPS int64 `json:"iops,omitempty"`
	// encrypted volumes; default the account's default.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
}

// AzureNodePoolPlatform is the virtual machine of each node of a pool.
type AzureNodePoolPlatform struct {
	// vmSize is the virtual machine size, such as Standard_D4s_v5.
	//
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z][A-Za-z0-9_]+$')",message="spec.platform.azure.vmSize must be a virtual machine size such as Standard_D4s_v5"
	VMSize string `json:"vmSize"`
	// image the virtual machines boot: a node image with hypershift and
	// cloud-init.
	Image AzureVMImage `json:"image"`
	// osDisk is the virtual machines' OS disk.
	//
	// +kubebuilder:default={sizeGiB: 30, diskStorageAccountType: Premium_LRS}
	// +optional
	OSDisk AzureOSDisk `json:"osDisk,omitzero"`
	// subnetID is the resource ID of the subnet the virtual machines are
	// attached to, in the cluster's virtual network.
	//
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.Network/virtualNetworks/[^/]+/subnets/[^/]+$')",message="spec.platform.azure.subnetID must be a subnet's resource ID: /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET/subnets/NAME"
	SubnetID string `json:"subnetID"`
	// availabilityZone the virtual machines are made in.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:XValidation:rule="self.matches('^[1-9][0-9]?$')",message="spec.platform.azure.availabilityZone must be a zone number such as 1"
	AvailabilityZone string `json:"availabilityZone,omitempty"`
}

// AzureVMImage is a virtual machine image: a resource ID or a marketplace
// image.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'ImageID' ? (has(self.imageID) && !has(self.azureMarketplace)) : (has(self.azureMarketplace) && !has(self.imageID))",message="spec.platform.azure.image: type ImageID takes imageID only, type AzureMarketplace azureMarketplace only"
type AzureVMImage struct {
	// type of the image.
	//
	// +kubebuilder:validation:Enum=ImageID;AzureMarketplace
	Type string `json:"type"`
	// imageID is the image's resource ID.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/subscriptions/')",message="spec.platform.azure.image.imageID must be an image's resource ID, /subscriptions/…"
	ImageID string `json:"imageID,omitempty"`
	// azureMarketplace is a marketplace image.
	// +optional
	AzureMarketplace *AzureMarketplaceImage `json:"azureMarketplace,omitempty"`
}

// AzureMarketplaceImage is an image of the Azure marketplace.
type AzureMarketplaceImage struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Publisher string `json:"publisher"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Offer string `json:"offer"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	SKU string `json:"sku"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version"`
}

// AzureOSDisk is a virtual machine's OS disk.
type AzureOSDisk struct {
	// sizeGiB of the disk.
	//
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=4095
	// +optional
	SizeGiB int32 `json:"sizeGiB,omitempty"`
	// diskStorageAccountType is the disk's storage type (Azure takes no
	// Premium SSD v2 or Ultra disk as an OS disk).
	//
	// +kubebuilder:default=Premium_LRS
	// +kubebuilder:validation:Enum=Premium_LRS;Standard_LRS;StandardSSD_LRS
	// +optional
	DiskStorageAccountType string `json:"diskStorageAccountType,omitempty"`
}

// HostPlatformSpec configures platform Host: nodes are machines of the
// management plane's host (hypershift up) or pods of the management
// cluster (hypershift install).
type HostPlatformSpec struct {
	// storageDriver gives the hosted cluster volumes of the management
	// cluster's storage, as KubeVirt CSI gives a KubeVirt guest the
	// infrastructure cluster's (docs/volumes.md): only where machines are
	// pods of the management cluster (the kube runtime). Immutable: the
	// StorageClasses it makes in the hosted cluster are made once.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.platform.host.storageDriver is immutable: the hosted cluster's StorageClasses are made from it once"
	StorageDriver *HostStorageDriverSpec `json:"storageDriver,omitempty"`
}

// HostStorageDriverType says which volumes a Host cluster gets from the
// management cluster.
//
// +kubebuilder:validation:Enum=None;Manual
type HostStorageDriverType string

const (
	// NoneStorageDriver gives no volumes of the management cluster.
	NoneStorageDriver HostStorageDriverType = "None"
	// ManualStorageDriver gives the StorageClasses of manual.storageClassMapping.
	ManualStorageDriver HostStorageDriverType = "Manual"
)

// MirrorsVolumes says whether a cluster of platform p gets volumes of the
// management cluster's storage (storageDriver type Manual).
func MirrorsVolumes(p PlatformSpec) bool {
	return p.Type == HostPlatform && p.Host != nil && p.Host.StorageDriver != nil &&
		p.Host.StorageDriver.Type == ManualStorageDriver && p.Host.StorageDriver.Manual != nil
}

// ManualStorageDriverOf is the Manual storage driver of GUEST=INFRA pairs
// of StorageClass names, at most 16, each guest class once.
func ManualStorageDriverOf(pairs []string) (*HostStorageDriverSpec, error) {
	if len(pairs) > 16 {
		return nil, fmt.Errorf("given %d times: at most 16 StorageClasses", len(pairs))
	}
	manual := &ManualStorageDriverSpec{}
	seen := map[string]bool{}
	for _, p := range pairs {
		guest, infra, ok := strings.Cut(p, "=")
		if !ok || len(validation.IsDNS1123Subdomain(guest)) > 0 || len(validation.IsDNS1123Subdomain(infra)) > 0 {
			return nil, fmt.Errorf("%q: use GUEST=INFRA, two StorageClass names (the hosted cluster's, made of the management cluster's)", p)
		}
		if seen[guest] {
			return nil, fmt.Errorf("%q: the hosted cluster's StorageClass %s is mapped twice", p, guest)
		}
		seen[guest] = true
		manual.StorageClassMapping = append(manual.StorageClassMapping, StorageClassMapping{GuestStorageClassName: guest, InfraStorageClassName: infra})
	}
	return &HostStorageDriverSpec{Type: ManualStorageDriver, Manual: manual}, nil
}

// HostStorageDriverSpec is a Host cluster's volumes of the management
// cluster's storage.
//
// +kubebuilder:validation:XValidation:rule="(self.type == 'Manual') == has(self.manual)",message="spec.platform.host.storageDriver.manual is required with type Manual, and only with it"
type HostStorageDriverSpec struct {
	// type: None or Manual.
	//
	// +kubebuilder:default=None
	// +optional
	Type HostStorageDriverType `json:"type,omitempty"`
	// manual maps the hosted cluster's StorageClasses to the management
	// cluster's, with type Manual.
	//
	// +optional
	Manual *ManualStorageDriverSpec `json:"manual,omitempty"`
}

// ManualStorageDriverSpec lists the StorageClasses a hosted cluster gets.
type ManualStorageDriverSpec struct {
	// storageClassMapping: for each, the control plane makes StorageClass
	// guestStorageClassName in the hosted cluster (provisioner
	// csi.hypershift.dev), and a claim of it gets a claim of
	// infraStorageClassName in the management cluster.
	//
	// +listType=map
	// +listMapKey=guestStorageClassName
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	StorageClassMapping []StorageClassMapping `json:"storageClassMapping"`
}

// StorageClassMapping ties a hosted cluster's StorageClass to one of the
// management cluster.
type StorageClassMapping struct {
	// infraStorageClassName is the management cluster's StorageClass the
	// volumes are made of.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="infraStorageClassName must be a DNS subdomain: lower-case letters, digits, '-' and '.'"
	InfraStorageClassName string `json:"infraStorageClassName"`
	// guestStorageClassName is the StorageClass made in the hosted
	// cluster.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="guestStorageClassName must be a DNS subdomain: lower-case letters, digits, '-' and '.'"
	GuestStorageClassName string `json:"guestStorageClassName"`
}
