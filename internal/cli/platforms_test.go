package cli

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
)

const (
	testSubscription = "00000000-0000-0000-0000-000000000001"
	testVnet         = "/subscriptions/" + testSubscription + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet"
)

// The command lines of the render golden files (platform first), each a
// cluster with a pool whose every machine flag is given.
var (
	renderKubeVirt = []string{
		"kubevirt", "--infra-kubeconfig-secret", "infra:config", "--infra-namespace", "vms",
		"--node-pool-replicas", "2", "--containerdisk", "registry.example.com/nodes/debian:13", "--cores", "4", "--memory", "16Gi",
		"--root-volume-size", "64", "--root-volume-storage-class", "fast", "--additional-network", "vms/storage",
		"--additional-network", "vms/backup", "--attach-default-network=false",
	}
	renderAWS = []string{
		"aws", "--aws-region", "eu-west-1", "--aws-vpc", "vpc-0123456789abcdef0", "--aws-credentials-secret", "aws-creds",
		"--aws-resource-tag", "team=infra", "--aws-resource-tag", "cost-center=42,43",
		"--node-pool-replicas", "3", "--instance-type", "m6i.large", "--ami", "ami-0123456789abcdef0",
		"--subnet-id", "subnet-0123456789abcdef0", "--security-group-id", "sg-0123456789abcdef0,sg-0123456789abcdef1",
		"--instance-profile", "nodes", "--root-volume-size", "200Gi", "--root-volume-type", "io2", "--root-volume-iops", "4000",
	}
	renderAzure = []string{
		"azure", "--azure-location", "westeurope", "--azure-subscription-id", testSubscription, "--azure-resource-group", "rg",
		"--azure-vnet-id", testVnet, "--azure-credentials-secret", "azure-creds", "--azure-cloud", "AzurePublicCloud",
		"--node-pool-replicas", "3", "--vm-size", "Standard_D4s_v5", "--marketplace", "publisher:offer:sku:1.0.0",
		"--subnet-id", testVnet + "/subnets/nodes", "--availability-zone", "2", "--os-disk-size", "64", "--os-disk-type", "StandardSSD_LRS",
	}
)

func TestPlatformInfraSpec(t *testing.T) {
	for name, tc := range map[string]struct {
		platform  hypershiftv1alpha1.PlatformType
		infra     PlatformInfra
		awsRegion string
		want      hypershiftv1alpha1.PlatformSpec
	}{
		"kubevirt beside the control plane": {
			platform: hypershiftv1alpha1.KubeVirtPlatform,
			want:     hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.KubeVirtPlatform, KubeVirt: &hypershiftv1alpha1.KubeVirtPlatformSpec{}},
		},
		"kubevirt external, default key": {
			platform: hypershiftv1alpha1.KubeVirtPlatform,
			infra:    PlatformInfra{InfraKubeconfigSecret: "infra", InfraNamespace: "vms"},
			want: hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.KubeVirtPlatform, KubeVirt: &hypershiftv1alpha1.KubeVirtPlatformSpec{
				Credentials: &hypershiftv1alpha1.KubeVirtPlatformCredentials{
					InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "kubeconfig"}, InfraNamespace: "vms",
				},
			}},
		},
		"kubevirt external, key given": {
			platform: hypershiftv1alpha1.KubeVirtPlatform,
			infra:    PlatformInfra{InfraKubeconfigSecret: "infra:admin.conf", InfraNamespace: "vms"},
			want: hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.KubeVirtPlatform, KubeVirt: &hypershiftv1alpha1.KubeVirtPlatformSpec{
				Credentials: &hypershiftv1alpha1.KubeVirtPlatformCredentials{
					InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "admin.conf"}, InfraNamespace: "vms",
				},
			}},
		},
		"aws": {
			platform: hypershiftv1alpha1.AWSPlatform, awsRegion: "us-east-1",
			infra: PlatformInfra{AWSVPC: "vpc-0123456789abcdef0", AWSCredentialsSecret: "aws", AWSResourceTags: []string{"a=1", "b=x=y", "empty="}},
			want: hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.AWSPlatform, AWS: &hypershiftv1alpha1.AWSPlatformSpec{
				Region: "us-east-1", VPC: "vpc-0123456789abcdef0", CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: "aws"},
				ResourceTags: []hypershiftv1alpha1.AWSResourceTag{{Key: "a", Value: "1"}, {Key: "b", Value: "x=y"}, {Key: "empty"}},
			}},
		},
		"azure, default cloud": {
			platform: hypershiftv1alpha1.AzurePlatform,
			infra: PlatformInfra{
				AzureLocation: "eastus", AzureSubscriptionID: testSubscription, AzureResourceGroup: "rg(1)",
				AzureVnetID: testVnet, AzureCredentialsSecret: "azure",
			},
			want: hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.AzurePlatform, Azure: &hypershiftv1alpha1.AzurePlatformSpec{
				Location: "eastus", SubscriptionID: testSubscription, ResourceGroup: "rg(1)", VnetID: testVnet,
				CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: "azure"},
			}},
		},
		"none has no block": {
			platform: hypershiftv1alpha1.NonePlatform, awsRegion: "us-east-1", // the webhook's
			want: hypershiftv1alpha1.PlatformSpec{Type: hypershiftv1alpha1.NonePlatform},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.infra.Spec(tc.platform, tc.awsRegion)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("spec.platform\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestPlatformMachine(t *testing.T) {
	gi := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	for name, tc := range map[string]struct {
		platform hypershiftv1alpha1.PlatformType
		machine  PlatformMachine
		want     hypershiftv1alpha1.NodePoolPlatform
	}{
		"kubevirt, the API's defaults": {
			platform: hypershiftv1alpha1.KubeVirtPlatform, machine: PlatformMachine{ContainerDisk: "registry.example.com/node:1"},
			want: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.KubeVirtPlatform, KubeVirt: &hypershiftv1alpha1.KubeVirtNodePoolPlatform{
				RootVolume: hypershiftv1alpha1.KubeVirtRootVolume{DiskImage: hypershiftv1alpha1.KubeVirtDiskImage{ContainerDiskImage: "registry.example.com/node:1"}},
			}},
		},
		"kubevirt, every flag": {
			platform: hypershiftv1alpha1.KubeVirtPlatform, machine: PlatformMachine{
				ContainerDisk: "registry.example.com/node:1", Cores: 4, Memory: "16Gi", RootVolumeSize: "64",
				RootVolumeStorageClass: "fast", AdditionalNetworks: []string{"vms/storage"}, AttachDefaultNetwork: ptr.To(false),
			},
			want: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.KubeVirtPlatform, KubeVirt: &hypershiftv1alpha1.KubeVirtNodePoolPlatform{
				Compute: hypershiftv1alpha1.KubeVirtCompute{Cores: 4, Memory: gi("16Gi")},
				RootVolume: hypershiftv1alpha1.KubeVirtRootVolume{
					DiskImage:  hypershiftv1alpha1.KubeVirtDiskImage{ContainerDiskImage: "registry.example.com/node:1"},
					Persistent: &hypershiftv1alpha1.KubeVirtPersistentVolume{Size: gi("64Gi"), StorageClass: "fast"},
				},
				AdditionalNetworks:   []hypershiftv1alpha1.KubeVirtNetwork{{Name: "vms/storage"}},
				AttachDefaultNetwork: ptr.To(false),
			}},
		},
		"kubevirt, a storage class makes the disk persistent": {
			platform: hypershiftv1alpha1.KubeVirtPlatform, machine: PlatformMachine{ContainerDisk: "node", RootVolumeStorageClass: "fast"},
			want: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.KubeVirtPlatform, KubeVirt: &hypershiftv1alpha1.KubeVirtNodePoolPlatform{
				RootVolume: hypershiftv1alpha1.KubeVirtRootVolume{
					DiskImage:  hypershiftv1alpha1.KubeVirtDiskImage{ContainerDiskImage: "node"},
					Persistent: &hypershiftv1alpha1.KubeVirtPersistentVolume{StorageClass: "fast"},
				},
			}},
		},
		"aws": {
			platform: hypershiftv1alpha1.AWSPlatform, machine: PlatformMachine{
				InstanceType: "m6i.large", AMI: "ami-0123456789abcdef0", SubnetID: "subnet-0123456789abcdef0",
				SecurityGroupIDs: []string{"sg-0123456789abcdef0"}, InstanceProfile: "nodes",
				RootVolumeSize: "200Gi", RootVolumeType: "gp3", RootVolumeIOPS: 4000,
			},
			want: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.AWSPlatform, AWS: &hypershiftv1alpha1.AWSNodePoolPlatform{
				InstanceType: "m6i.large", AMI: "ami-0123456789abcdef0", InstanceProfile: "nodes",
				Subnet:         hypershiftv1alpha1.AWSResourceReference{ID: "subnet-0123456789abcdef0"},
				SecurityGroups: []hypershiftv1alpha1.AWSResourceReference{{ID: "sg-0123456789abcdef0"}},
				RootVolume:     hypershiftv1alpha1.AWSVolume{Size: 200, Type: "gp3", IOPS: 4000},
			}},
		},
		"azure, marketplace image": {
			platform: hypershiftv1alpha1.AzurePlatform, machine: PlatformMachine{
				VMSize: "Standard_D4s_v5", SubnetID: testVnet + "/subnets/nodes", Marketplace: "p:o:s:1.0",
				AvailabilityZone: "1", OSDiskSize: "64Gi", OSDiskType: "Premium_LRS",
			},
			want: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.AzurePlatform, Azure: &hypershiftv1alpha1.AzureNodePoolPlatform{
				VMSize: "Standard_D4s_v5", SubnetID: testVnet + "/subnets/nodes", AvailabilityZone: "1",
				Image: hypershiftv1alpha1.AzureVMImage{Type: "AzureMarketplace", AzureMarketplace: &hypershiftv1alpha1.AzureMarketplaceImage{
					Publisher: "p", Offer: "o", SKU: "s", Version: "1.0",
				}},
				OSDisk: hypershiftv1alpha1.AzureOSDisk{SizeGiB: 64, DiskStorageAccountType: "Premium_LRS"},
			}},
		},
		"azure, image ID": {
			platform: hypershiftv1alpha1.AzurePlatform, machine: PlatformMachine{
				VMSize: "Standard_D4s_v5", SubnetID: testVnet + "/subnets/nodes", ImageID: "/subscriptions/s/images/node",
			},
			want: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.AzurePlatform, Azure: &hypershiftv1alpha1.AzureNodePoolPlatform{
				VMSize: "Standard_D4s_v5", SubnetID: testVnet + "/subnets/nodes",
				Image: hypershiftv1alpha1.AzureVMImage{Type: "ImageID", ImageID: "/subscriptions/s/images/node"},
			}},
		},
		"simulated has no block": {
			platform: hypershiftv1alpha1.SimulatedPlatform,
			want:     hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.SimulatedPlatform},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.machine.NodePoolPlatform(tc.platform)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("spec.platform\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// --aws-region is the cluster's region with platform aws, and still the
// webhook's default with it.
func TestAWSRegionServesBoth(t *testing.T) {
	spec := &ClusterSpec{
		Namespace: "clusters", Name: "a", Platform: hypershiftv1alpha1.AWSPlatform,
		ServiceCIDR: hypershiftv1alpha1.DefaultServiceCIDR, ClusterCIDR: hypershiftv1alpha1.DefaultClusterCIDR,
		AvailabilityPolicy: string(hypershiftv1alpha1.SingleReplica), Publishing: string(hypershiftv1alpha1.HostPort),
		AWSRegion: "us-east-1", WorkloadIdentityWebhook: true,
		Infra: PlatformInfra{AWSVPC: "vpc-0123456789abcdef0", AWSCredentialsSecret: "aws"},
	}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	_, hc, np := spec.Objects()
	if hc.Spec.Platform.AWS.Region != "us-east-1" || hc.Spec.WorkloadIdentityWebhook.AWSRegion != "us-east-1" {
		t.Errorf("region %q, webhook's %q: want us-east-1 for both", hc.Spec.Platform.AWS.Region, hc.Spec.WorkloadIdentityWebhook.AWSRegion)
	}
	if np != nil {
		t.Errorf("a pool without --node-pool-replicas: %+v", np.Spec)
	}
}

// The credentials' Secrets are looked up before anything is made, as the
// cluster would wait for them.
func TestPlatformSecretsMustExist(t *testing.T) {
	spec := &ClusterSpec{Namespace: "clusters", Infra: PlatformInfra{AzureCredentialsSecret: "azure"}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	err := spec.checkSecrets(t.Context(), c)
	want := "--azure-credentials-secret: Secret clusters/azure does not exist: create it with `kubectl -n clusters create secret generic azure --from-literal=AZURE_CLIENT_ID="
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
	c = fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "azure"}}).Build()
	if err := spec.checkSecrets(t.Context(), c); err != nil {
		t.Error(err)
	}
}

// Every platform flag the checks name is a flag of the commands: of
// create cluster, and for the machines' of create nodepool too.
func TestPlatformFlagsAreFlags(t *testing.T) {
	cluster, nodePool := newCreateClusterCommand(nil), newCreateNodePoolCommand(nil)
	for _, f := range (&PlatformInfra{}).flagsGiven() {
		if cluster.Flags().Lookup(strings.TrimPrefix(f.name, "--")) == nil {
			t.Errorf("create cluster has no flag %s", f.name)
		}
	}
	for _, f := range (&PlatformMachine{}).flagsGiven() {
		name := strings.TrimPrefix(f.name, "--")
		if cluster.Flags().Lookup(name) == nil || nodePool.Flags().Lookup(name) == nil {
			t.Errorf("%s is not a flag of both create cluster and create nodepool", f.name)
		}
	}
}
