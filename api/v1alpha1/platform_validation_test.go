package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

const (
	testSubscription = "00000000-0000-0000-0000-000000000001"
	testVnet         = "/subscriptions/" + testSubscription + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet"
)

// platformCluster is a valid HostedCluster of a provider platform.
func platformCluster(name string, typ hypershiftv1alpha1.PlatformType) *hypershiftv1alpha1.HostedCluster {
	hc := hypershiftv1alpha1.NewHostedCluster("platforms", name, typ, version.KubernetesVersion)
	switch typ {
	case hypershiftv1alpha1.KubeVirtPlatform:
		hc.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtPlatformSpec{}
	case hypershiftv1alpha1.AWSPlatform:
		hc.Spec.Platform.AWS = &hypershiftv1alpha1.AWSPlatformSpec{
			Region: "us-east-1", VPC: "vpc-0123456789abcdef0",
			CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: "aws"},
		}
	case hypershiftv1alpha1.AzurePlatform:
		hc.Spec.Platform.Azure = &hypershiftv1alpha1.AzurePlatformSpec{
			Location: "eastus", SubscriptionID: testSubscription, ResourceGroup: "rg", VnetID: testVnet,
			CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: "azure"},
		}
	}
	return hc
}

// platformPool is a valid NodePool of a provider platform.
func platformPool(name string, typ hypershiftv1alpha1.PlatformType) *hypershiftv1alpha1.NodePool {
	np := &hypershiftv1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platforms", Name: name},
		Spec: hypershiftv1alpha1.NodePoolSpec{
			ClusterName: "dev", Replicas: ptr.To[int32](1),
			Platform:   hypershiftv1alpha1.NodePoolPlatform{Type: typ},
			Management: hypershiftv1alpha1.NodePoolManagement{UpgradeType: hypershiftv1alpha1.UpgradeTypeReplace},
		},
	}
	switch typ {
	case hypershiftv1alpha1.KubeVirtPlatform:
		np.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtNodePoolPlatform{
			RootVolume: hypershiftv1alpha1.KubeVirtRootVolume{DiskImage: hypershiftv1alpha1.KubeVirtDiskImage{ContainerDiskImage: "registry.example.com/node:1"}},
		}
	case hypershiftv1alpha1.AWSPlatform:
		np.Spec.Platform.AWS = &hypershiftv1alpha1.AWSNodePoolPlatform{
			InstanceType: "m6i.large", AMI: "ami-0123456789abcdef0",
			Subnet: hypershiftv1alpha1.AWSResourceReference{ID: "subnet-0123456789abcdef0"},
		}
	case hypershiftv1alpha1.AzurePlatform:
		np.Spec.Platform.Azure = &hypershiftv1alpha1.AzureNodePoolPlatform{
			VMSize: "Standard_D4s_v5", SubnetID: testVnet + "/subnets/nodes",
			Image: hypershiftv1alpha1.AzureVMImage{Type: "ImageID", ImageID: "/subscriptions/" + testSubscription + "/resourceGroups/rg/providers/Microsoft.Compute/images/node"},
		}
	}
	return np
}

// TestPlatformAdmission runs the validation of the provider platforms'
// fields against a real API server: each rule's error names the field.
func TestPlatformAdmission(t *testing.T) {
	c := testenv.Start(t).Client
	createNamespace(t, c, "platforms")
	// The CRD's rules are tested here, not the runtime's admission
	// policy (internal/install): the process runtime's, which testenv
	// installs, refuses spec.platform.host.storageDriver before an update
	// reaches the rules of immutability.
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: install.RuntimePolicyName}}
	if err := c.Delete(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	probe := platformCluster("probe", hypershiftv1alpha1.HostPlatform)
	probe.Spec.Platform.Host = hostStorage("fast", "standard")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := c.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runtime policy still applies after its binding was deleted: %v", err)
		}
	}

	clusters := []struct {
		name    string
		typ     hypershiftv1alpha1.PlatformType
		mutate  func(*hypershiftv1alpha1.HostedCluster)
		wantErr string
	}{
		{name: "kubevirt", typ: hypershiftv1alpha1.KubeVirtPlatform},
		{name: "kubevirt-external", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.KubeVirt.Credentials = &hypershiftv1alpha1.KubeVirtPlatformCredentials{
				InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "kubeconfig"}, InfraNamespace: "vms",
			}
		}},
		{name: "kubevirt-bad-namespace", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.KubeVirt.Credentials = &hypershiftv1alpha1.KubeVirtPlatformCredentials{
				InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "kubeconfig"}, InfraNamespace: "VMs",
			}
		}, wantErr: "spec.platform.kubevirt.credentials.infraNamespace must be a namespace name"},
		{name: "kubevirt-without-block", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.KubeVirt = nil
		}, wantErr: "spec.platform.kubevirt is required with spec.platform.type KubeVirt"},
		{name: "none-with-aws-block", typ: hypershiftv1alpha1.NonePlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.AWS = platformCluster("x", hypershiftv1alpha1.AWSPlatform).Spec.Platform.AWS
		}, wantErr: "spec.platform.aws is required with spec.platform.type AWS, and only with it"},
		{name: "aws", typ: hypershiftv1alpha1.AWSPlatform},
		{name: "aws-bad-region", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.AWS.Region = "US East"
		}, wantErr: "spec.platform.aws.region must be an AWS region"},
		{name: "aws-bad-vpc", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.AWS.VPC = "my-vpc"
		}, wantErr: "spec.platform.aws.vpc must be a VPC ID"},
		{name: "aws-reserved-tag", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.AWS.ResourceTags = []hypershiftv1alpha1.AWSResourceTag{{Key: "aws:owner", Value: "x"}}
		}, wantErr: "must not begin with aws:"},
		{name: "azure", typ: hypershiftv1alpha1.AzurePlatform},
		{name: "azure-bad-subscription", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Azure.SubscriptionID = "mine"
		}, wantErr: "spec.platform.azure.subscriptionID must be a subscription ID"},
		{name: "azure-bad-vnet", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Azure.VnetID = "vnet"
		}, wantErr: "spec.platform.azure.vnetID must be a virtual network's resource ID"},
		{name: "azure-vnet-of-another-subscription", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Azure.VnetID = strings.Replace(testVnet, testSubscription, "11111111-2222-3333-4444-555555555555", 1)
		}, wantErr: "spec.platform.azure.vnetID must be in spec.platform.azure.subscriptionID"},
		{name: "azure-bad-cloud", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Azure.Cloud = "AzureStack"
		}, wantErr: "spec.platform.azure.cloud"},
		{name: "host-storage", typ: hypershiftv1alpha1.HostPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Host = hostStorage("fast", "standard")
		}},
		{name: "host-storage-none", typ: hypershiftv1alpha1.HostPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Host = &hypershiftv1alpha1.HostPlatformSpec{StorageDriver: &hypershiftv1alpha1.HostStorageDriverSpec{}}
		}},
		{name: "none-with-host-block", typ: hypershiftv1alpha1.NonePlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Host = hostStorage("fast", "standard")
		}, wantErr: "spec.platform.host is only for spec.platform.type Host"},
		{name: "host-manual-without-mapping", typ: hypershiftv1alpha1.HostPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Host = hostStorage("fast", "standard")
			hc.Spec.Platform.Host.StorageDriver.Manual = nil
		}, wantErr: "spec.platform.host.storageDriver.manual is required with type Manual, and only with it"},
		{name: "host-bad-class", typ: hypershiftv1alpha1.HostPlatform, mutate: func(hc *hypershiftv1alpha1.HostedCluster) {
			hc.Spec.Platform.Host = hostStorage("Fast_SSD", "standard")
		}, wantErr: "infraStorageClassName must be a DNS subdomain"},
	}
	for _, tc := range clusters {
		t.Run("HostedCluster/"+tc.name, func(t *testing.T) {
			hc := platformCluster(tc.name, tc.typ)
			if tc.mutate != nil {
				tc.mutate(hc)
			}
			wantAdmission(t, c.Create(t.Context(), hc), tc.wantErr)
		})
	}

	t.Run("HostedCluster/host-storage-immutable", func(t *testing.T) {
		hc := platformCluster("host-later", hypershiftv1alpha1.HostPlatform)
		wantAdmission(t, c.Create(t.Context(), hc), "")
		hc.Spec.Platform.Host = hostStorage("fast", "standard")
		wantAdmission(t, c.Update(t.Context(), hc), "spec.platform.host.storageDriver can be neither set nor removed after creation")
		hc = platformCluster("host-changed", hypershiftv1alpha1.HostPlatform)
		hc.Spec.Platform.Host = hostStorage("fast", "standard")
		wantAdmission(t, c.Create(t.Context(), hc), "")
		hc.Spec.Platform.Host.StorageDriver.Manual.StorageClassMapping[0].InfraStorageClassName = "slow"
		wantAdmission(t, c.Update(t.Context(), hc), "spec.platform.host.storageDriver is immutable")
	})

	t.Run("HostedCluster/immutable", func(t *testing.T) {
		hc := platformCluster("immutable", hypershiftv1alpha1.AzurePlatform)
		wantAdmission(t, c.Create(t.Context(), hc), "")
		hc.Spec.Platform.Azure.CredentialsSecret.Name = "rotated"
		wantAdmission(t, c.Update(t.Context(), hc), "")
		hc.Spec.Platform.Azure.ResourceGroup = "other"
		wantAdmission(t, c.Update(t.Context(), hc), "location, subscriptionID, resourceGroup and vnetID are immutable")

		kv := platformCluster("immutable-kv", hypershiftv1alpha1.KubeVirtPlatform)
		wantAdmission(t, c.Create(t.Context(), kv), "")
		kv.Spec.Platform.KubeVirt.Credentials = &hypershiftv1alpha1.KubeVirtPlatformCredentials{
			InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "kubeconfig"}, InfraNamespace: "vms",
		}
		wantAdmission(t, c.Update(t.Context(), kv), "spec.platform.kubevirt.credentials can be neither set nor removed after creation")
	})

	pools := []struct {
		name    string
		typ     hypershiftv1alpha1.PlatformType
		mutate  func(*hypershiftv1alpha1.NodePool)
		wantErr string
	}{
		{name: "kubevirt", typ: hypershiftv1alpha1.KubeVirtPlatform},
		{name: "kubevirt-persistent", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.KubeVirt.RootVolume.Persistent = &hypershiftv1alpha1.KubeVirtPersistentVolume{Size: ptr.To(resource.MustParse("40Gi")), StorageClass: "fast"}
			np.Spec.Platform.KubeVirt.AdditionalNetworks = []hypershiftv1alpha1.KubeVirtNetwork{{Name: "default/vlan10"}}
		}},
		{name: "kubevirt-bad-network", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.KubeVirt.AdditionalNetworks = []hypershiftv1alpha1.KubeVirtNetwork{{Name: "vlan10"}}
		}, wantErr: "spec.platform.kubevirt.additionalNetworks[].name must be NAMESPACE/NAME"},
		{name: "kubevirt-zero-cores", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.KubeVirt.Compute.Cores = -1
		}, wantErr: "spec.platform.kubevirt.compute.cores"},
		{name: "kubevirt-in-place", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeInPlace
		}, wantErr: "spec.management.upgradeType InPlace is not supported on platform KubeVirt"},
		{name: "kubevirt-without-block", typ: hypershiftv1alpha1.KubeVirtPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.KubeVirt = nil
		}, wantErr: "spec.platform.kubevirt is required with spec.platform.type KubeVirt"},
		{name: "aws", typ: hypershiftv1alpha1.AWSPlatform},
		{name: "aws-io2-with-iops", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.RootVolume = hypershiftv1alpha1.AWSVolume{Type: "io2", IOPS: 4000}
		}},
		{name: "aws-io1-without-iops", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.RootVolume = hypershiftv1alpha1.AWSVolume{Type: "io1"}
		}, wantErr: "spec.platform.aws.rootVolume: a volume of type io1 or io2 needs iops"},
		{name: "aws-gp2-with-iops", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.RootVolume = hypershiftv1alpha1.AWSVolume{Type: "gp2", IOPS: 3000}
		}, wantErr: "spec.platform.aws.rootVolume.iops is for volumes of type io1, io2 or gp3"},
		{name: "aws-bad-instance-type", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.InstanceType = "large"
		}, wantErr: "spec.platform.aws.instanceType must be an EC2 instance type"},
		{name: "aws-bad-ami", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.AMI = "debian-13"
		}, wantErr: "spec.platform.aws.ami must be an AMI ID"},
		{name: "aws-small-root", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.RootVolume = hypershiftv1alpha1.AWSVolume{Size: 4}
		}, wantErr: "spec.platform.aws.rootVolume.size"},
		{name: "aws-bad-subnet", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.Subnet.ID = "public"
		}, wantErr: "an AWS resource id must be a subnet or security group ID"},
		{name: "aws-security-group-as-subnet", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.Subnet.ID = "sg-0123456789abcdef0"
		}, wantErr: "spec.platform.aws.subnet.id must be a subnet ID"},
		{name: "aws-subnet-as-security-group", typ: hypershiftv1alpha1.AWSPlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.AWS.SecurityGroups = []hypershiftv1alpha1.AWSResourceReference{{ID: "subnet-0123456789abcdef0"}}
		}, wantErr: "spec.platform.aws.securityGroups[].id must be a security group ID"},
		{name: "azure", typ: hypershiftv1alpha1.AzurePlatform},
		{name: "azure-marketplace", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.Azure.Image = hypershiftv1alpha1.AzureVMImage{Type: "AzureMarketplace", AzureMarketplace: &hypershiftv1alpha1.AzureMarketplaceImage{
				Publisher: "Debian", Offer: "debian-13", SKU: "13-gen2", Version: "latest",
			}}
			np.Spec.Platform.Azure.AvailabilityZone = "2"
		}},
		{name: "azure-image-mismatch", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.Azure.Image.Type = "AzureMarketplace"
		}, wantErr: "spec.platform.azure.image: type ImageID takes imageID only"},
		{name: "azure-bad-subnet", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.Azure.SubnetID = testVnet
		}, wantErr: "spec.platform.azure.subnetID must be a subnet's resource ID"},
		{name: "azure-bad-disk-type", typ: hypershiftv1alpha1.AzurePlatform, mutate: func(np *hypershiftv1alpha1.NodePool) {
			np.Spec.Platform.Azure.OSDisk = hypershiftv1alpha1.AzureOSDisk{DiskStorageAccountType: "Fast"}
		}, wantErr: "spec.platform.azure.osDisk.diskStorageAccountType"},
	}
	for _, tc := range pools {
		t.Run("NodePool/"+tc.name, func(t *testing.T) {
			np := platformPool(tc.name, tc.typ)
			if tc.mutate != nil {
				tc.mutate(np)
			}
			wantAdmission(t, c.Create(t.Context(), np), tc.wantErr)
		})
	}

	t.Run("NodePool/defaults", func(t *testing.T) {
		kv := platformPool("defaults-kv", hypershiftv1alpha1.KubeVirtPlatform)
		kv.Spec.Platform.KubeVirt.RootVolume.Persistent = &hypershiftv1alpha1.KubeVirtPersistentVolume{}
		wantAdmission(t, c.Create(t.Context(), kv), "")
		if got := kv.Spec.Platform.KubeVirt; got.Compute.Cores != 2 || got.Compute.Memory.String() != "8Gi" || got.RootVolume.Persistent.Size.String() != "32Gi" {
			t.Errorf("kubevirt defaults: %+v, root %+v; want 2 cores, 8Gi, a 32Gi volume", got.Compute, got.RootVolume.Persistent)
		}
		aws := platformPool("defaults-aws", hypershiftv1alpha1.AWSPlatform)
		wantAdmission(t, c.Create(t.Context(), aws), "")
		if got := aws.Spec.Platform.AWS.RootVolume; got.Size != 120 || got.Type != "gp3" {
			t.Errorf("aws root volume defaults: %+v, want 120 GiB gp3", got)
		}
		az := platformPool("defaults-azure", hypershiftv1alpha1.AzurePlatform)
		wantAdmission(t, c.Create(t.Context(), az), "")
		if got := az.Spec.Platform.Azure.OSDisk; got.SizeGiB != 30 || got.DiskStorageAccountType != "Premium_LRS" {
			t.Errorf("azure os disk defaults: %+v, want 30 GiB Premium_LRS", got)
		}
	})
}

// hostStorage maps guest class guest to the management cluster's infra.
func hostStorage(infra, guest string) *hypershiftv1alpha1.HostPlatformSpec {
	return &hypershiftv1alpha1.HostPlatformSpec{StorageDriver: &hypershiftv1alpha1.HostStorageDriverSpec{
		Type: hypershiftv1alpha1.ManualStorageDriver,
		Manual: &hypershiftv1alpha1.ManualStorageDriverSpec{StorageClassMapping: []hypershiftv1alpha1.StorageClassMapping{
			{InfraStorageClassName: infra, GuestStorageClassName: guest},
		}},
	}}
}

// wantAdmission checks an API server's answer: accepted when want is "",
// else refused with an error containing want.
func wantAdmission(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && err == nil:
		t.Fatalf("accepted; want an error containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %v; want one containing %q", err, want)
	}
}
