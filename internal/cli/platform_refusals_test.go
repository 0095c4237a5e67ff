package cli

import (
	"strings"
	"testing"
)

// Each refusal of a platform's flags names the flag, before the command
// connects anywhere: the runs have no management plane, so an error of
// connecting would mean the flags were let through.
func TestPlatformFlagsRefused(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	empty := t.TempDir()
	kubevirt := []string{"create", "cluster", "kubevirt", "--name", "a"}
	aws := []string{"create", "cluster", "aws", "--name", "a", "--aws-region", "us-east-1", "--aws-vpc", "vpc-0123456789abcdef0", "--aws-credentials-secret", "aws"}
	azure := []string{
		"create", "cluster", "azure", "--name", "a", "--azure-location", "eastus", "--azure-subscription-id", testSubscription,
		"--azure-resource-group", "rg", "--azure-vnet-id", testVnet, "--azure-credentials-secret", "azure",
	}
	kubevirtPool := []string{"create", "nodepool", "--cluster-name", "a", "--platform", "kubevirt", "--containerdisk", "node:1"}
	awsPool := []string{"create", "nodepool", "--cluster-name", "a", "--platform", "aws", "--instance-type", "m6i.large", "--ami", "ami-0123456789abcdef0", "--subnet-id", "subnet-0123456789abcdef0"}
	azurePool := []string{"create", "nodepool", "--cluster-name", "a", "--platform", "azure", "--vm-size", "Standard_D4s_v5", "--subnet-id", testVnet + "/subnets/nodes", "--image-id", "/subscriptions/s/images/node"}
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	tests := []struct {
		args []string
		want string
	}{
		// The cluster's infrastructure.
		{with(kubevirt, "--infra-namespace", "vms"), "--infra-kubeconfig-secret and --infra-namespace go together"},
		{with(kubevirt, "--infra-kubeconfig-secret", "Infra", "--infra-namespace", "vms"), `--infra-kubeconfig-secret "Infra" is not a Secret name`},
		{with(kubevirt, "--infra-kubeconfig-secret", "infra:a/b", "--infra-namespace", "vms"), `--infra-kubeconfig-secret "infra:a/b": "a/b" is not a Secret key`},
		{with(kubevirt, "--infra-kubeconfig-secret", "infra", "--infra-namespace", "VMs"), `--infra-namespace "VMs" must be a namespace name`},
		{[]string{"create", "cluster", "aws", "--name", "a"}, "platform aws needs --aws-region: the region of the VPC"},
		{[]string{"create", "cluster", "aws", "--name", "a", "--aws-region", "us-east-1"}, "platform aws needs --aws-vpc"},
		{[]string{"create", "cluster", "aws", "--name", "a", "--aws-region", "us-east-1", "--aws-vpc", "vpc-0123456789abcdef0"}, "platform aws needs --aws-credentials-secret"},
		{with(aws, "--aws-region", "US East"), `--aws-region "US East" must be an AWS region such as us-east-1`},
		{with(aws, "--aws-vpc", "my-vpc"), `--aws-vpc "my-vpc" must be a VPC ID`},
		{with(aws, "--aws-credentials-secret", "AWS"), `--aws-credentials-secret "AWS" is not a Secret name`},
		{with(aws, "--aws-resource-tag", "aws:owner=me"), "a key must not begin with aws:"},
		{with(aws, "--aws-resource-tag", "owner"), `--aws-resource-tag "owner": want KEY=VALUE`},
		{with(aws, "--aws-resource-tag", "a=1", "--aws-resource-tag", "a=2"), "key a is given twice"},
		{with(aws, "--aws-resource-tag", "a="+strings.Repeat("v", 257)), "a value 256"},
		{[]string{"create", "cluster", "azure", "--name", "a"}, "platform azure needs --azure-location"},
		{with(azure, "--azure-location", "East US"), `--azure-location "East US" must be an Azure region name`},
		{with(azure, "--azure-subscription-id", "mine"), `--azure-subscription-id "mine" must be a subscription ID`},
		{with(azure, "--azure-resource-group", "rg."), `--azure-resource-group "rg." must be a resource group name`},
		{with(azure, "--azure-vnet-id", "vnet"), `--azure-vnet-id "vnet" must be a virtual network's resource ID`},
		{with(azure, "--azure-cloud", "AzureStack"), `--azure-cloud "AzureStack": use AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud`},
		// Flags of another platform, or of a pool there is not.
		{[]string{"create", "cluster", "none", "--name", "a", "--aws-vpc", "vpc-0123456789abcdef0"}, "--aws-vpc is a flag of platform aws, not of none"},
		{with(azure, "--infra-namespace", "vms"), "--infra-namespace is a flag of platform kubevirt, not of azure"},
		{with(aws, "--azure-cloud", "AzureChinaCloud"), "--azure-cloud is a flag of platform azure, not of aws"},
		{with(azure, "--aws-region", "us-east-1"), "--azure-tenant-id and --aws-region are settings of --workload-identity-webhook (--aws-region also of platform aws)"},
		{[]string{"create", "cluster", "host", "--name", "a", "--node-pool-replicas", "1", "--containerdisk", "node:1"}, "--containerdisk is a flag of platform kubevirt, not of host"},
		{with(aws, "--instance-type", "m6i.large"), "--instance-type describes the nodes of the pool --node-pool-replicas makes: give --node-pool-replicas N"},
		{with(kubevirt, "--node-pool-replicas", "1", "--containerdisk", "node:1", "--subnet-id", "subnet-0123456789abcdef0"), "--subnet-id is a flag of platforms aws and azure, not of kubevirt"},
		{with(kubevirtPool, "--vm-size", "Standard_D4s_v5"), "--vm-size is a flag of platform azure, not of kubevirt"},
		{[]string{"create", "nodepool", "--cluster-name", "a", "--cores", "4"}, "--cores is a flag of platform kubevirt, not of simulated"},
		{[]string{"create", "nodepool", "--cluster-name", "a", "--platform", "gcp"}, `unknown platform "gcp": use none, simulated, host, kubevirt, aws or azure`},
		// KubeVirt machines.
		{with(kubevirt, "--node-pool-replicas", "1"), "platform kubevirt needs --containerdisk"},
		{[]string{"create", "nodepool", "--cluster-name", "a", "--platform", "kubevirt"}, "platform kubevirt needs --containerdisk"},
		{with(kubevirtPool, "--containerdisk", "-node"), `--containerdisk "-node" must be an image reference`},
		{with(kubevirtPool, "--cores", "300"), "--cores 300: give 1 to 256"},
		{with(kubevirtPool, "--memory", "512Mi"), `--memory "512Mi": give a size of at least 1Gi`},
		{with(kubevirtPool, "--memory", "lots"), `--memory "lots": give a size`},
		{with(kubevirtPool, "--root-volume-size", "big"), `--root-volume-size "big": give a size in GiB (32) or a quantity (32Gi)`},
		{with(kubevirtPool, "--root-volume-storage-class", strings.Repeat("s", 254)), "--root-volume-storage-class: a StorageClass name is at most 253 characters"},
		{with(kubevirtPool, "--additional-network", "storage"), `--additional-network "storage" must be NAMESPACE/NAME of a NetworkAttachmentDefinition`},
		{with(kubevirtPool, "--additional-network", "n/a,n/b,n/c,n/d,n/e,n/f,n/g,n/h,n/i"), "--additional-network: 9 networks, at most 8"},
		{with(kubevirtPool, "--attach-default-network=false"), "--attach-default-network=false needs an --additional-network"},
		// AWS machines.
		{with(aws, "--node-pool-replicas", "1"), "platform aws needs --instance-type"},
		{[]string{"create", "nodepool", "--cluster-name", "a", "--platform", "aws", "--instance-type", "m6i.large", "--ami", "ami-0123456789abcdef0"}, "platform aws needs --subnet-id"},
		{with(awsPool, "--instance-type", "large"), `--instance-type "large" must be an EC2 instance type`},
		{with(awsPool, "--ami", "ami-x"), `--ami "ami-x" must be an AMI ID`},
		{with(awsPool, "--subnet-id", "sg-0123456789abcdef0"), `--subnet-id "sg-0123456789abcdef0" must be a subnet ID`},
		{with(awsPool, "--security-group-id", "subnet-0123456789abcdef0"), `--security-group-id "subnet-0123456789abcdef0" must be a security group ID`},
		{with(awsPool, "--instance-profile", "my profile"), `--instance-profile "my profile" must be an IAM instance profile name`},
		{with(awsPool, "--root-volume-size", "4"), `--root-volume-size "4": give whole GiB from 8 to 16384`},
		{with(awsPool, "--root-volume-size", "10.5Gi"), `--root-volume-size "10.5Gi": give whole GiB`},
		{with(awsPool, "--root-volume-type", "gp4"), `--root-volume-type "gp4": use gp2, gp3, io1, io2, standard`},
		{with(awsPool, "--root-volume-iops", "50"), "--root-volume-iops 50: give 100 to 256000"},
		{with(awsPool, "--root-volume-iops", "3000", "--root-volume-type", "gp2"), "--root-volume-iops is for --root-volume-type io1, io2 or gp3, not gp2"},
		// Azure machines.
		{with(azure, "--node-pool-replicas", "1"), "platform azure needs --vm-size"},
		{with(azurePool, "--vm-size", "D4 v5"), `--vm-size "D4 v5" must be a virtual machine size`},
		{with(azurePool, "--subnet-id", "subnet-0123456789abcdef0"), `--subnet-id "subnet-0123456789abcdef0" must be a subnet's resource ID`},
		{with(azurePool, "--image-id", ""), "platform azure needs --image-id or --marketplace, one of them"},
		{with(azurePool, "--marketplace", "p:o:s:v"), "platform azure needs --image-id or --marketplace, one of them"},
		{with(azurePool, "--image-id", "node"), `--image-id "node" must be an image's resource ID`},
		{with(azurePool, "--image-id", "", "--marketplace", "p:o:s"), `--marketplace "p:o:s" must be PUBLISHER:OFFER:SKU:VERSION`},
		{with(azurePool, "--availability-zone", "a"), `--availability-zone "a" must be a zone number`},
		{with(azurePool, "--os-disk-size", "8"), `--os-disk-size "8": give whole GiB from 16 to 4095`},
		{with(azurePool, "--os-disk-type", "SSD"), `--os-disk-type "SSD": use Premium_LRS`},
		{with(azurePool, "--os-disk-type", "UltraSSD_LRS"), `--os-disk-type "UltraSSD_LRS": use Premium_LRS`},
		{
			with(azure, "--azure-vnet-id", "/subscriptions/11111111-2222-3333-4444-555555555555/resourceGroups/net/providers/Microsoft.Network/virtualNetworks/v"),
			"is not in subscription --azure-subscription-id " + testSubscription,
		},
		{
			with(azure, "--node-pool-replicas", "1", "--vm-size", "Standard_D4s_v5", "--image-id", "/subscriptions/s/images/node",
				"--subnet-id", "/subscriptions/"+testSubscription+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/other/subnets/nodes"),
			"is not a subnet of --azure-vnet-id " + testVnet,
		},
		{with(awsPool, "--root-volume-type", "io2"), "--root-volume-type io2 needs --root-volume-iops"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(t, append([]string{"--data-dir", empty}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// The valid command lines the refusals start from are let through to
// connecting (and to printing with --render).
func TestPlatformFlagsAccepted(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	empty := t.TempDir()
	for _, args := range [][]string{
		{"create", "nodepool", "--cluster-name", "a", "--platform", "kubevirt", "--containerdisk", "node:1", "--render"},
		{"create", "nodepool", "--cluster-name", "a", "--platform", "aws", "--instance-type", "m6i.large", "--ami", "ami-0123456789abcdef0", "--subnet-id", "subnet-0123456789abcdef0", "--render"},
		{"create", "nodepool", "--cluster-name", "a", "--platform", "azure", "--vm-size", "Standard_D4s_v5", "--subnet-id", testVnet + "/subnets/nodes", "--marketplace", "p:o:s:v", "--render"},
		{"create", "cluster", "kubevirt", "--name", "a"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := run(t, append([]string{"--data-dir", empty}, args...)...)
			if args[len(args)-1] == "--render" {
				if err != nil || !strings.Contains(out, "kind: NodePool") {
					t.Errorf("error %v, printed %q", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "no management plane found") {
				t.Errorf("error %v, want the one of connecting", err)
			}
		})
	}
}
