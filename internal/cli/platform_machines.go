package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// PlatformMachine is each node's machine of a pool of platform KubeVirt,
// AWS or Azure: the NodePool's spec.platform.kubevirt, aws or azure. An
// empty value is unset, and the API's default applies.
type PlatformMachine struct {
	// KubeVirt.
	Cores                  int32
	Memory, ContainerDisk  string
	RootVolumeStorageClass string
	AdditionalNetworks     []string // NAMESPACE/NAME
	AttachDefaultNetwork   *bool
	// KubeVirt and AWS: GiB (120) or a quantity (120Gi).
	RootVolumeSize string
	// AWS and Azure.
	SubnetID string
	// AWS.
	InstanceType, AMI, InstanceProfile, RootVolumeType string
	SecurityGroupIDs                                   []string
	RootVolumeIOPS                                     int64
	// Azure; Marketplace is PUBLISHER:OFFER:SKU:VERSION.
	VMSize, ImageID, Marketplace             string
	AvailabilityZone, OSDiskSize, OSDiskType string

	attachDefaultNetwork bool // the flag, AttachDefaultNetwork when given
}

func addPlatformMachineFlags(cmd *cobra.Command, m *PlatformMachine) {
	f := cmd.Flags()
	f.Int32Var(&m.Cores, "cores", 0, "kubevirt: processor cores of each VirtualMachine, 1 to 256 (default 2)")
	f.StringVar(&m.Memory, "memory", "", "kubevirt: memory of each VirtualMachine, at least 1Gi (default 8Gi)")
	f.StringVar(&m.RootVolumeSize, "root-volume-size", "", "kubevirt, aws: size of each node's root volume in GiB (120) or as a quantity (120Gi); kubevirt: makes the disk persistent (default: ephemeral), aws: 8 to 16384 GiB (default 120)")
	f.StringVar(&m.RootVolumeStorageClass, "root-volume-storage-class", "", "kubevirt: StorageClass of the infrastructure cluster for a persistent root volume (default: its default class)")
	f.StringVar(&m.ContainerDisk, "containerdisk", "", "kubevirt: container disk image the VirtualMachines boot, a node image with hypershift and cloud-init (required)")
	f.StringSliceVar(&m.AdditionalNetworks, "additional-network", nil, "kubevirt: NAMESPACE/NAME of a NetworkAttachmentDefinition of the infrastructure cluster the VirtualMachines are also attached to (repeat, at most 8)")
	f.BoolVar(&m.attachDefaultNetwork, "attach-default-network", true, "kubevirt: attach the VirtualMachines to the infrastructure cluster's pod network (=false needs an --additional-network)")
	f.StringVar(&m.SubnetID, "subnet-id", "", "aws: ID of the subnet of the instances (subnet-…); azure: resource ID of the subnet of the virtual machines, in the cluster's virtual network (required)")
	f.StringVar(&m.InstanceType, "instance-type", "", "aws: EC2 instance type, such as m6i.large (required)")
	f.StringVar(&m.AMI, "ami", "", "aws: AMI the instances boot, a node image with hypershift and cloud-init, such as ami-0123456789abcdef0 (required)")
	f.StringSliceVar(&m.SecurityGroupIDs, "security-group-id", nil, "aws: ID of a security group added to the instances, sg-… (repeat, at most 16)")
	f.StringVar(&m.InstanceProfile, "instance-profile", "", "aws: IAM instance profile of the instances")
	f.StringVar(&m.RootVolumeType, "root-volume-type", "", "aws: gp2, gp3, io1, io2 or standard (default gp3)")
	f.Int64Var(&m.RootVolumeIOPS, "root-volume-iops", 0, "aws: IOPS of an io1, io2 or gp3 root volume, 100 to 256000")
	f.StringVar(&m.VMSize, "vm-size", "", "azure: virtual machine size, such as Standard_D4s_v5 (required)")
	f.StringVar(&m.ImageID, "image-id", "", "azure: resource ID of the image the virtual machines boot, /subscriptions/… (this or --marketplace)")
	f.StringVar(&m.Marketplace, "marketplace", "", "azure: marketplace image PUBLISHER:OFFER:SKU:VERSION the virtual machines boot (this or --image-id)")
	f.StringVar(&m.AvailabilityZone, "availability-zone", "", "azure: zone of the virtual machines, such as 1")
	f.StringVar(&m.OSDiskSize, "os-disk-size", "", "azure: size of the OS disk in GiB (30) or as a quantity (30Gi), 16 to 4095 GiB (default 30)")
	f.StringVar(&m.OSDiskType, "os-disk-type", "", "azure: Premium_LRS, Standard_LRS or StandardSSD_LRS (default Premium_LRS)")
}

// readFlags completes m from what addPlatformMachineFlags cannot say by
// value alone: whether --attach-default-network was given.
func (m *PlatformMachine) readFlags(cmd *cobra.Command) {
	if cmd.Flags().Changed("attach-default-network") {
		m.AttachDefaultNetwork = &m.attachDefaultNetwork
	}
}

// flagsGiven are the machine flags, whether each is given, and the
// platforms each is for.
func (m *PlatformMachine) flagsGiven() []platformFlag {
	kubeVirtAWS := []hypershiftv1alpha1.PlatformType{hypershiftv1alpha1.KubeVirtPlatform, hypershiftv1alpha1.AWSPlatform}
	awsAzure := []hypershiftv1alpha1.PlatformType{hypershiftv1alpha1.AWSPlatform, hypershiftv1alpha1.AzurePlatform}
	return []platformFlag{
		{"--cores", m.Cores != 0, kubeVirtOnly},
		{"--memory", m.Memory != "", kubeVirtOnly},
		{"--root-volume-size", m.RootVolumeSize != "", kubeVirtAWS},
		{"--root-volume-storage-class", m.RootVolumeStorageClass != "", kubeVirtOnly},
		{"--containerdisk", m.ContainerDisk != "", kubeVirtOnly},
		{"--additional-network", len(m.AdditionalNetworks) > 0, kubeVirtOnly},
		{"--attach-default-network", m.AttachDefaultNetwork != nil, kubeVirtOnly},
		{"--subnet-id", m.SubnetID != "", awsAzure},
		{"--instance-type", m.InstanceType != "", awsOnly},
		{"--ami", m.AMI != "", awsOnly},
		{"--security-group-id", len(m.SecurityGroupIDs) > 0, awsOnly},
		{"--instance-profile", m.InstanceProfile != "", awsOnly},
		{"--root-volume-type", m.RootVolumeType != "", awsOnly},
		{"--root-volume-iops", m.RootVolumeIOPS != 0, awsOnly},
		{"--vm-size", m.VMSize != "", azureOnly},
		{"--image-id", m.ImageID != "", azureOnly},
		{"--marketplace", m.Marketplace != "", azureOnly},
		{"--availability-zone", m.AvailabilityZone != "", azureOnly},
		{"--os-disk-size", m.OSDiskSize != "", azureOnly},
		{"--os-disk-type", m.OSDiskType != "", azureOnly},
	}
}

// NodePoolPlatform is the spec.platform of a pool of platform, or an
// error naming the flag that is missing, malformed or of another platform.
func (m *PlatformMachine) NodePoolPlatform(platform hypershiftv1alpha1.PlatformType) (hypershiftv1alpha1.NodePoolPlatform, error) {
	out := hypershiftv1alpha1.NodePoolPlatform{Type: platform}
	if err := refuseOtherPlatforms(platform, m.flagsGiven()); err != nil {
		return out, err
	}
	var err error
	switch platform {
	case hypershiftv1alpha1.KubeVirtPlatform:
		out.KubeVirt, err = m.kubeVirt()
	case hypershiftv1alpha1.AWSPlatform:
		out.AWS, err = m.aws()
	case hypershiftv1alpha1.AzurePlatform:
		out.Azure, err = m.azure()
	}
	return out, err
}

// The machines' fields' rules (api/v1alpha1/platform_types.go). The AWS
// subnet and security groups share one rule there; each flag takes its own
// kind of ID.
var (
	containerDiskImage = pattern(`^[^ -][^ ]*$`, 512, "an image reference")
	kubeVirtNetwork    = pattern(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, 253, "NAMESPACE/NAME of a NetworkAttachmentDefinition")
	awsInstanceType    = pattern(`^[a-z][a-z0-9-]*[0-9][a-z0-9-]*\.[a-z0-9]+$`, 64, "an EC2 instance type such as m6i.large")
	awsAMI             = pattern(`^ami-[0-9a-f]{8,17}$`, 32, "an AMI ID such as ami-0123456789abcdef0")
	awsSubnet          = pattern(`^subnet-[0-9a-f]{8,17}$`, 32, "a subnet ID such as subnet-0123456789abcdef0")
	awsSecurityGroup   = pattern(`^sg-[0-9a-f]{8,17}$`, 32, "a security group ID such as sg-0123456789abcdef0")
	awsInstanceProfile = pattern(`^[\w+=,.@-]+$`, 128, "an IAM instance profile name")
	azureVMSize        = pattern(`^[A-Za-z][A-Za-z0-9_]+$`, 64, "a virtual machine size such as Standard_D4s_v5")
	azureImageID       = pattern(`^/subscriptions/`, 512, "an image's resource ID, /subscriptions/…")
	azureSubnetID      = pattern(`^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.Network/virtualNetworks/[^/]+/subnets/[^/]+$`, 512, "a subnet's resource ID: /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNET/subnets/NAME")
	azureMarketplace   = pattern(`^[^:]{1,128}:[^:]{1,128}:[^:]{1,128}:[^:]{1,64}$`, 451, "PUBLISHER:OFFER:SKU:VERSION of a marketplace image (each at most 128 characters, VERSION 64)")
	azureZone          = pattern(`^[1-9][0-9]?$`, 8, "a zone number such as 1")
)

func (m *PlatformMachine) kubeVirt() (*hypershiftv1alpha1.KubeVirtNodePoolPlatform, error) {
	if err := requireFlags(hypershiftv1alpha1.KubeVirtPlatform,
		requiredFlag{"--containerdisk", m.ContainerDisk, "the container disk image the VirtualMachines boot"}); err != nil {
		return nil, err
	}
	kv := &hypershiftv1alpha1.KubeVirtNodePoolPlatform{AttachDefaultNetwork: m.AttachDefaultNetwork}
	kv.RootVolume.DiskImage.ContainerDiskImage = m.ContainerDisk
	if err := containerDiskImage.check("--containerdisk", m.ContainerDisk); err != nil {
		return nil, err
	}
	if m.Cores < 0 || m.Cores > 256 {
		return nil, fmt.Errorf("--cores %d: give 1 to 256", m.Cores)
	}
	kv.Compute.Cores = m.Cores
	if m.Memory != "" {
		q, err := resource.ParseQuantity(m.Memory)
		if err != nil || q.Cmp(resource.MustParse("1Gi")) < 0 {
			return nil, fmt.Errorf("--memory %q: give a size of at least 1Gi, such as 8Gi", m.Memory)
		}
		kv.Compute.Memory = &q
	}
	if m.RootVolumeSize != "" || m.RootVolumeStorageClass != "" {
		kv.RootVolume.Persistent = &hypershiftv1alpha1.KubeVirtPersistentVolume{StorageClass: m.RootVolumeStorageClass}
		if len(m.RootVolumeStorageClass) > 253 {
			return nil, fmt.Errorf("--root-volume-storage-class: a StorageClass name is at most 253 characters")
		}
		if m.RootVolumeSize != "" {
			q, err := parseGiB(m.RootVolumeSize)
			if err != nil || q.Sign() <= 0 {
				return nil, fmt.Errorf("--root-volume-size %q: give a size in GiB (32) or a quantity (32Gi)", m.RootVolumeSize)
			}
			kv.RootVolume.Persistent.Size = &q
		}
	}
	if len(m.AdditionalNetworks) > 8 {
		return nil, fmt.Errorf("--additional-network: %d networks, at most 8", len(m.AdditionalNetworks))
	}
	for _, n := range m.AdditionalNetworks {
		if err := kubeVirtNetwork.check("--additional-network", n); err != nil {
			return nil, err
		}
		kv.AdditionalNetworks = append(kv.AdditionalNetworks, hypershiftv1alpha1.KubeVirtNetwork{Name: n})
	}
	if m.AttachDefaultNetwork != nil && !*m.AttachDefaultNetwork && len(m.AdditionalNetworks) == 0 {
		return nil, fmt.Errorf("--attach-default-network=false needs an --additional-network: a VirtualMachine needs a network")
	}
	return kv, nil
}

func (m *PlatformMachine) aws() (*hypershiftv1alpha1.AWSNodePoolPlatform, error) {
	if err := requireFlags(hypershiftv1alpha1.AWSPlatform,
		requiredFlag{"--instance-type", m.InstanceType, "the EC2 instance type, such as m6i.large"},
		requiredFlag{"--ami", m.AMI, "the AMI the instances boot"},
		requiredFlag{"--subnet-id", m.SubnetID, "the subnet the instances run in"},
	); err != nil {
		return nil, err
	}
	if err := firstError(awsInstanceType.check("--instance-type", m.InstanceType), awsAMI.check("--ami", m.AMI),
		awsSubnet.check("--subnet-id", m.SubnetID), checkOneOf("--root-volume-type", m.RootVolumeType, "gp2", "gp3", "io1", "io2", "standard"),
	); err != nil {
		return nil, err
	}
	aws := &hypershiftv1alpha1.AWSNodePoolPlatform{
		InstanceType: m.InstanceType, AMI: m.AMI, InstanceProfile: m.InstanceProfile,
		Subnet:     hypershiftv1alpha1.AWSResourceReference{ID: m.SubnetID},
		RootVolume: hypershiftv1alpha1.AWSVolume{Type: m.RootVolumeType, IOPS: m.RootVolumeIOPS},
	}
	if m.InstanceProfile != "" {
		if err := awsInstanceProfile.check("--instance-profile", m.InstanceProfile); err != nil {
			return nil, err
		}
	}
	if len(m.SecurityGroupIDs) > 16 {
		return nil, fmt.Errorf("--security-group-id: %d security groups, at most 16", len(m.SecurityGroupIDs))
	}
	for _, id := range m.SecurityGroupIDs {
		if err := awsSecurityGroup.check("--security-group-id", id); err != nil {
			return nil, err
		}
		aws.SecurityGroups = append(aws.SecurityGroups, hypershiftv1alpha1.AWSResourceReference{ID: id})
	}
	if m.RootVolumeSize != "" {
		var err error
		if aws.RootVolume.Size, err = wholeGiB("--root-volume-size", m.RootVolumeSize, 8, 16384); err != nil {
			return nil, err
		}
	}
	switch {
	case m.RootVolumeIOPS != 0 && (m.RootVolumeIOPS < 100 || m.RootVolumeIOPS > 256000):
		return nil, fmt.Errorf("--root-volume-iops %d: give 100 to 256000", m.RootVolumeIOPS)
	case m.RootVolumeIOPS != 0 && (m.RootVolumeType == "gp2" || m.RootVolumeType == "standard"):
		return nil, fmt.Errorf("--root-volume-iops is for --root-volume-type io1, io2 or gp3, not %s", m.RootVolumeType)
	case m.RootVolumeIOPS == 0 && (m.RootVolumeType == "io1" || m.RootVolumeType == "io2"):
		return nil, fmt.Errorf("--root-volume-type %s needs --root-volume-iops", m.RootVolumeType)
	}
	return aws, nil
}

func (m *PlatformMachine) azure() (*hypershiftv1alpha1.AzureNodePoolPlatform, error) {
	if err := requireFlags(hypershiftv1alpha1.AzurePlatform,
		requiredFlag{"--vm-size", m.VMSize, "the virtual machine size, such as Standard_D4s_v5"},
		requiredFlag{"--subnet-id", m.SubnetID, "the resource ID of the subnet of the virtual machines"},
	); err != nil {
		return nil, err
	}
	if err := firstError(azureVMSize.check("--vm-size", m.VMSize), azureSubnetID.check("--subnet-id", m.SubnetID),
		checkOneOf("--os-disk-type", m.OSDiskType, "Premium_LRS", "Standard_LRS", "StandardSSD_LRS"),
	); err != nil {
		return nil, err
	}
	az := &hypershiftv1alpha1.AzureNodePoolPlatform{VMSize: m.VMSize, SubnetID: m.SubnetID, AvailabilityZone: m.AvailabilityZone}
	az.OSDisk.DiskStorageAccountType = m.OSDiskType
	var err error
	if az.Image, err = m.azureImage(); err != nil {
		return nil, err
	}
	if m.AvailabilityZone != "" {
		if err := azureZone.check("--availability-zone", m.AvailabilityZone); err != nil {
			return nil, err
		}
	}
	if m.OSDiskSize != "" {
		size, err := wholeGiB("--os-disk-size", m.OSDiskSize, 16, 4095)
		if err != nil {
			return nil, err
		}
		az.OSDisk.SizeGiB = int32(size) //nolint:gosec // at most 4095
	}
	return az, nil
}

// azureImage is --image-id or --marketplace PUBLISHER:OFFER:SKU:VERSION,
// exactly one.
func (m *PlatformMachine) azureImage() (hypershiftv1alpha1.AzureVMImage, error) {
	switch {
	case (m.ImageID == "") == (m.Marketplace == ""):
		return hypershiftv1alpha1.AzureVMImage{}, fmt.Errorf("platform azure needs --image-id or --marketplace, one of them: the image the virtual machines boot")
	case m.ImageID != "":
		return hypershiftv1alpha1.AzureVMImage{Type: "ImageID", ImageID: m.ImageID}, azureImageID.check("--image-id", m.ImageID)
	}
	if err := azureMarketplace.check("--marketplace", m.Marketplace); err != nil {
		return hypershiftv1alpha1.AzureVMImage{}, err
	}
	parts := strings.Split(m.Marketplace, ":")
	return hypershiftv1alpha1.AzureVMImage{Type: "AzureMarketplace", AzureMarketplace: &hypershiftv1alpha1.AzureMarketplaceImage{
		Publisher: parts[0], Offer: parts[1], SKU: parts[2], Version: parts[3],
	}}, nil
}
