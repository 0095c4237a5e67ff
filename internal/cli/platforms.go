package cli

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// The flags of the platforms whose machines a Cluster API provider makes
// (KubeVirt, AWS, Azure) and the API fields they become: the cluster's
// infrastructure here, each node's machine in platform_machines.go. A value
// is checked as the field's admission rule checks it (platform_values.go),
// so a mistake is refused naming the flag before anything is created.

// PlatformInfra is the infrastructure of a cluster of platform KubeVirt,
// AWS or Azure (spec.platform.kubevirt, aws or azure); the AWS region is
// ClusterSpec.AWSRegion, which the workload-identity webhook shares.
type PlatformInfra struct {
	// KubeVirt on an external infrastructure cluster: NAME[:KEY] of the
	// Secret of its kubeconfig, and the namespace of the VirtualMachines.
	InfraKubeconfigSecret, InfraNamespace string
	AWSVPC, AWSCredentialsSecret          string
	AWSResourceTags                       []string // KEY=VALUE
	AzureLocation, AzureSubscriptionID    string
	AzureResourceGroup, AzureVnetID       string
	AzureCredentialsSecret, AzureCloud    string
}

func addPlatformInfraFlags(cmd *cobra.Command, p *PlatformInfra) {
	f := cmd.Flags()
	f.StringVar(&p.InfraKubeconfigSecret, "infra-kubeconfig-secret", "", "kubevirt: Secret NAME (key kubeconfig) or NAME:KEY in the cluster's namespace with the kubeconfig of an external infrastructure cluster that runs the VirtualMachines (with --infra-namespace; default: the management cluster)")
	f.StringVar(&p.InfraNamespace, "infra-namespace", "", "kubevirt: namespace of the infrastructure cluster the VirtualMachines are made in (with --infra-kubeconfig-secret)")
	f.StringVar(&p.AWSVPC, "aws-vpc", "", "aws: ID of the VPC the nodes run in, such as vpc-0123456789abcdef0 (required)")
	f.StringVar(&p.AWSCredentialsSecret, "aws-credentials-secret", "", "aws: Secret in the cluster's namespace with AccessKeyID and SecretAccessKey (and SessionToken) the provider makes the instances with (required)")
	f.StringArrayVar(&p.AWSResourceTags, "aws-resource-tag", nil, "aws: tag KEY=VALUE of every AWS resource made for the cluster (repeat)")
	f.StringVar(&p.AzureLocation, "azure-location", "", "azure: region of the nodes, such as eastus (required)")
	f.StringVar(&p.AzureSubscriptionID, "azure-subscription-id", "", "azure: subscription of the resource group (required)")
	f.StringVar(&p.AzureResourceGroup, "azure-resource-group", "", "azure: resource group the virtual machines are made in (required)")
	f.StringVar(&p.AzureVnetID, "azure-vnet-id", "", "azure: resource ID of the virtual network of the nodes' subnets, /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/NAME (required)")
	f.StringVar(&p.AzureCredentialsSecret, "azure-credentials-secret", "", "azure: Secret in the cluster's namespace with the service principal's AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET (required)")
	f.StringVar(&p.AzureCloud, "azure-cloud", "", "azure: AzurePublicCloud, AzureUSGovernmentCloud or AzureChinaCloud (default AzurePublicCloud)")
}

// flagsGiven are the infrastructure flags, whether each is given, and
// the platforms each is for.
func (p *PlatformInfra) flagsGiven() []platformFlag {
	return []platformFlag{
		{"--infra-kubeconfig-secret", p.InfraKubeconfigSecret != "", kubeVirtOnly},
		{"--infra-namespace", p.InfraNamespace != "", kubeVirtOnly},
		{"--aws-vpc", p.AWSVPC != "", awsOnly},
		{"--aws-credentials-secret", p.AWSCredentialsSecret != "", awsOnly},
		{"--aws-resource-tag", len(p.AWSResourceTags) > 0, awsOnly},
		{"--azure-location", p.AzureLocation != "", azureOnly},
		{"--azure-subscription-id", p.AzureSubscriptionID != "", azureOnly},
		{"--azure-resource-group", p.AzureResourceGroup != "", azureOnly},
		{"--azure-vnet-id", p.AzureVnetID != "", azureOnly},
		{"--azure-credentials-secret", p.AzureCredentialsSecret != "", azureOnly},
		{"--azure-cloud", p.AzureCloud != "", azureOnly},
	}
}

// Spec is spec.platform of a cluster of platform, or an error naming the
// flag that is missing, malformed or of another platform.
func (p *PlatformInfra) Spec(platform hypershiftv1alpha1.PlatformType, awsRegion string) (hypershiftv1alpha1.PlatformSpec, error) {
	spec := hypershiftv1alpha1.PlatformSpec{Type: platform}
	if err := refuseOtherPlatforms(platform, p.flagsGiven()); err != nil {
		return spec, err
	}
	var err error
	switch platform {
	case hypershiftv1alpha1.KubeVirtPlatform:
		spec.KubeVirt, err = p.kubeVirt()
	case hypershiftv1alpha1.AWSPlatform:
		spec.AWS, err = p.aws(awsRegion)
	case hypershiftv1alpha1.AzurePlatform:
		spec.Azure, err = p.azure()
	}
	return spec, err
}

func (p *PlatformInfra) kubeVirt() (*hypershiftv1alpha1.KubeVirtPlatformSpec, error) {
	spec := &hypershiftv1alpha1.KubeVirtPlatformSpec{}
	switch {
	case p.InfraKubeconfigSecret == "" && p.InfraNamespace == "":
		return spec, nil // the VirtualMachines run beside the control plane
	case p.InfraKubeconfigSecret == "" || p.InfraNamespace == "":
		return nil, fmt.Errorf("--infra-kubeconfig-secret and --infra-namespace go together: the infrastructure cluster's kubeconfig, and the namespace there of the VirtualMachines")
	}
	name, key, ok := strings.Cut(p.InfraKubeconfigSecret, ":")
	if !ok {
		key = "kubeconfig"
	}
	if err := checkSecretName("--infra-kubeconfig-secret", name); err != nil {
		return nil, err
	}
	if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
		return nil, fmt.Errorf("--infra-kubeconfig-secret %q: %q is not a Secret key: %s", p.InfraKubeconfigSecret, key, strings.Join(errs, "; "))
	}
	if err := namespaceName.check("--infra-namespace", p.InfraNamespace); err != nil {
		return nil, err
	}
	spec.Credentials = &hypershiftv1alpha1.KubeVirtPlatformCredentials{
		InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: name, Key: key},
		InfraNamespace:        p.InfraNamespace,
	}
	return spec, nil
}

func (p *PlatformInfra) aws(region string) (*hypershiftv1alpha1.AWSPlatformSpec, error) {
	if err := requireFlags(hypershiftv1alpha1.AWSPlatform,
		requiredFlag{"--aws-region", region, "the region of the VPC, such as us-east-1"},
		requiredFlag{"--aws-vpc", p.AWSVPC, "the ID of the VPC the nodes run in"},
		requiredFlag{"--aws-credentials-secret", p.AWSCredentialsSecret, "the Secret of the credentials the provider makes instances with"},
	); err != nil {
		return nil, err
	}
	if err := firstError(awsRegion.check("--aws-region", region), awsVPC.check("--aws-vpc", p.AWSVPC),
		checkSecretName("--aws-credentials-secret", p.AWSCredentialsSecret)); err != nil {
		return nil, err
	}
	tags, err := parseResourceTags(p.AWSResourceTags)
	if err != nil {
		return nil, err
	}
	return &hypershiftv1alpha1.AWSPlatformSpec{
		Region: region, VPC: p.AWSVPC, ResourceTags: tags,
		CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: p.AWSCredentialsSecret},
	}, nil
}

// parseResourceTags reads --aws-resource-tag KEY=VALUE, as the API's
// AWSResourceTag takes it: at most 25, each key once and not aws:….
func parseResourceTags(in []string) ([]hypershiftv1alpha1.AWSResourceTag, error) {
	if len(in) > 25 {
		return nil, fmt.Errorf("--aws-resource-tag: %d tags, at most 25", len(in))
	}
	var tags []hypershiftv1alpha1.AWSResourceTag
	for _, kv := range in {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			return nil, fmt.Errorf("--aws-resource-tag %q: want KEY=VALUE", kv)
		case strings.HasPrefix(k, "aws:"):
			return nil, fmt.Errorf("--aws-resource-tag %q: a key must not begin with aws:, which AWS reserves", kv)
		case utf8.RuneCountInString(k) > 128 || utf8.RuneCountInString(v) > 256:
			return nil, fmt.Errorf("--aws-resource-tag %q: a key is at most 128 characters, a value 256", kv)
		case slices.ContainsFunc(tags, func(t hypershiftv1alpha1.AWSResourceTag) bool { return t.Key == k }):
			return nil, fmt.Errorf("--aws-resource-tag %q: key %s is given twice", kv, k)
		}
		tags = append(tags, hypershiftv1alpha1.AWSResourceTag{Key: k, Value: v})
	}
	return tags, nil
}

func (p *PlatformInfra) azure() (*hypershiftv1alpha1.AzurePlatformSpec, error) {
	if err := requireFlags(hypershiftv1alpha1.AzurePlatform,
		requiredFlag{"--azure-location", p.AzureLocation, "the region of the nodes, such as eastus"},
		requiredFlag{"--azure-subscription-id", p.AzureSubscriptionID, "the subscription of the resource group"},
		requiredFlag{"--azure-resource-group", p.AzureResourceGroup, "the resource group the virtual machines are made in"},
		requiredFlag{"--azure-vnet-id", p.AzureVnetID, "the resource ID of the nodes' virtual network"},
		requiredFlag{"--azure-credentials-secret", p.AzureCredentialsSecret, "the Secret of the service principal the provider makes virtual machines with"},
	); err != nil {
		return nil, err
	}
	if err := firstError(
		azureLocation.check("--azure-location", p.AzureLocation),
		azureSubscriptionID.check("--azure-subscription-id", p.AzureSubscriptionID),
		azureResourceGroup.check("--azure-resource-group", p.AzureResourceGroup),
		azureVnetID.check("--azure-vnet-id", p.AzureVnetID),
		checkSecretName("--azure-credentials-secret", p.AzureCredentialsSecret),
		checkOneOf("--azure-cloud", p.AzureCloud, "AzurePublicCloud", "AzureUSGovernmentCloud", "AzureChinaCloud"),
	); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(strings.ToLower(p.AzureVnetID), "/subscriptions/"+strings.ToLower(p.AzureSubscriptionID)+"/") {
		return nil, fmt.Errorf("--azure-vnet-id %s is not in subscription --azure-subscription-id %s: the provider names the nodes' subnets under it", p.AzureVnetID, p.AzureSubscriptionID)
	}
	return &hypershiftv1alpha1.AzurePlatformSpec{
		Cloud: p.AzureCloud, Location: p.AzureLocation, SubscriptionID: p.AzureSubscriptionID,
		ResourceGroup: p.AzureResourceGroup, VnetID: p.AzureVnetID,
		CredentialsSecret: hypershiftv1alpha1.SecretReference{Name: p.AzureCredentialsSecret},
	}, nil
}

// secrets are the Secrets the infrastructure names, for
// ClusterSpec.checkSecrets.
func (p *PlatformInfra) secrets(namespace string) []namedSecret {
	kubeconfig, key, ok := strings.Cut(p.InfraKubeconfigSecret, ":")
	if !ok {
		key = "kubeconfig"
	}
	create := "create it with `kubectl -n " + namespace + " create secret generic "
	return []namedSecret{
		{"--infra-kubeconfig-secret", kubeconfig, create + kubeconfig + " --from-file=" + key + "=INFRA.kubeconfig`"},
		{"--aws-credentials-secret", p.AWSCredentialsSecret, create + p.AWSCredentialsSecret + " --from-literal=AccessKeyID=… --from-literal=SecretAccessKey=…`"},
		{"--azure-credentials-secret", p.AzureCredentialsSecret, create + p.AzureCredentialsSecret + " --from-literal=AZURE_CLIENT_ID=… --from-literal=AZURE_TENANT_ID=… --from-literal=AZURE_CLIENT_SECRET=…`"},
	}
}

// platformFlag is a flag of some platforms only, and whether it is given.
type platformFlag struct {
	name      string
	given     bool
	platforms []hypershiftv1alpha1.PlatformType
}

var (
	kubeVirtOnly = []hypershiftv1alpha1.PlatformType{hypershiftv1alpha1.KubeVirtPlatform}
	awsOnly      = []hypershiftv1alpha1.PlatformType{hypershiftv1alpha1.AWSPlatform}
	azureOnly    = []hypershiftv1alpha1.PlatformType{hypershiftv1alpha1.AzurePlatform}
)

// refuseOtherPlatforms names the first flag given that is not platform's.
func refuseOtherPlatforms(platform hypershiftv1alpha1.PlatformType, flags []platformFlag) error {
	for _, f := range flags {
		if f.given && !slices.Contains(f.platforms, platform) {
			names := make([]string, len(f.platforms))
			for i, p := range f.platforms {
				names[i] = platformName(p)
			}
			of := "platform "
			if len(names) > 1 {
				of = "platforms "
			}
			return fmt.Errorf("%s is a flag of %s%s, not of %s", f.name, of, strings.Join(names, " and "), platformName(platform))
		}
	}
	return nil
}

// platformName is how the command line names a platform.
func platformName(p hypershiftv1alpha1.PlatformType) string { return strings.ToLower(string(p)) }

// validatePlatform checks the flags of the cluster's infrastructure and,
// with a pool, of its machines.
func (o *ClusterSpec) validatePlatform() error {
	infra, err := o.Infra.Spec(o.Platform, o.AWSRegion)
	if err != nil {
		return err
	}
	if o.NodePoolReplicas != nil {
		pool, err := o.Machine.NodePoolPlatform(o.Platform)
		if err != nil {
			return err
		}
		// What the NodePool controller would refuse of the pair.
		if az := pool.Azure; az != nil && infra.Azure != nil &&
			!strings.HasPrefix(strings.ToLower(az.SubnetID), strings.ToLower(infra.Azure.VnetID)+"/subnets/") {
			return fmt.Errorf("--subnet-id %s is not a subnet of --azure-vnet-id %s", az.SubnetID, infra.Azure.VnetID)
		}
		return nil
	}
	machineFlags := o.Machine.flagsGiven()
	if err := refuseOtherPlatforms(o.Platform, machineFlags); err != nil {
		return err
	}
	for _, f := range machineFlags {
		if f.given {
			return fmt.Errorf("%s describes the nodes of the pool --node-pool-replicas makes: give --node-pool-replicas N", f.name)
		}
	}
	return nil
}
