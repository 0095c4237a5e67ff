package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The flags' patterns are the CRDs' own: every `self.matches` rule under
// spec.platform has the pattern of its flag, with the same most length,
// so the command line refuses exactly what admission would. Only the AWS
// subnet and security groups, one rule in the API, take each its own kind
// of ID here.
func TestPatternsMirrorTheCRDs(t *testing.T) {
	for crd, fields := range map[string]map[string]valuePattern{
		"hypershift.dev_hostedclusters.yaml": {
			"spec.platform.kubevirt.credentials.infraNamespace": namespaceName,
			"spec.platform.aws.region":                          awsRegion,
			"spec.platform.aws.vpc":                             awsVPC,
			"spec.platform.azure.location":                      azureLocation,
			"spec.platform.azure.subscriptionID":                azureSubscriptionID,
			"spec.platform.azure.resourceGroup":                 azureResourceGroup,
			"spec.platform.azure.vnetID":                        azureVnetID,
		},
		"hypershift.dev_nodepools.yaml": {
			"spec.platform.kubevirt.additionalNetworks[].name": kubeVirtNetwork,
			"spec.platform.aws.instanceType":                   awsInstanceType,
			"spec.platform.aws.ami":                            awsAMI,
			"spec.platform.aws.subnet.id":                      awsSubnet,
			"spec.platform.aws.securityGroups[].id":            awsSecurityGroup,
			"spec.platform.aws.instanceProfile":                awsInstanceProfile,
			"spec.platform.azure.vmSize":                       azureVMSize,
			"spec.platform.azure.subnetID":                     azureSubnetID,
			"spec.platform.azure.availabilityZone":             azureZone,
		},
	} {
		t.Run(crd, func(t *testing.T) {
			rules := crdPatterns(t, "../../config/crd/bases/"+crd)
			for path, rule := range rules {
				p, ok := fields[path]
				if !ok {
					t.Errorf("%s: the rule matches(%q) has no flag pattern", path, rule.expr)
					continue
				}
				want := rule.expr
				if kind, ok := awsIDKinds[path]; ok {
					want = strings.Replace(want, "(subnet|sg)", kind, 1)
				}
				if p.re.String() != want {
					t.Errorf("%s: flag pattern %q, the CRD's %q", path, p.re.String(), want)
				}
				if rule.maxLength != 0 && p.max != rule.maxLength {
					t.Errorf("%s: flag's most length %d, the CRD's %d", path, p.max, rule.maxLength)
				}
			}
			for path := range fields {
				if _, ok := rules[path]; !ok {
					t.Errorf("%s: no matches rule in %s", path, crd)
				}
			}
		})
	}
}

// awsIDKinds are the AWS ID fields of one rule in the API, (subnet|sg),
// and the kind of ID each one's flag takes.
var awsIDKinds = map[string]string{"spec.platform.aws.subnet.id": "subnet", "spec.platform.aws.securityGroups[].id": "sg"}

type crdRule struct {
	expr      string
	maxLength int
}

var matchesRule = regexp.MustCompile(`^self\.matches\('(.*)'\)$`)

// crdPatterns are the `self.matches` rules under spec.platform of the CRD
// at path, by field path ([] for a list's items).
func crdPatterns(t *testing.T, path string) map[string]crdRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatal(err)
	}
	rules := map[string]crdRule{}
	var walk func(string, apiextensionsv1.JSONSchemaProps)
	walk = func(at string, s apiextensionsv1.JSONSchemaProps) {
		for _, v := range s.XValidations {
			if m := matchesRule.FindStringSubmatch(v.Rule); m != nil {
				r := crdRule{expr: strings.ReplaceAll(m[1], `\\`, `\`)}
				if s.MaxLength != nil {
					r.maxLength = int(*s.MaxLength)
				}
				rules[at] = r
			}
		}
		for name, p := range s.Properties {
			walk(at+"."+name, p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(at+"[]", *s.Items.Schema)
		}
	}
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	walk("spec.platform", schema.Properties["spec"].Properties["platform"])
	return rules
}
