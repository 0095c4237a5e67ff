package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// How platforms.go and platform_machines.go check a flag's value: as the
// admission rule of its field checks it, with a message naming the flag.

type requiredFlag struct{ name, value, what string }

func requireFlags(platform hypershiftv1alpha1.PlatformType, flags ...requiredFlag) error {
	for _, f := range flags {
		if f.value == "" {
			return fmt.Errorf("platform %s needs %s: %s", platformName(platform), f.name, f.what)
		}
	}
	return nil
}

// valuePattern is a field's admission rule: the expression it matches,
// its most characters, and what its message says the value must be.
type valuePattern struct {
	re   *regexp.Regexp
	max  int
	what string
}

func pattern(expr string, maxLength int, what string) valuePattern {
	return valuePattern{regexp.MustCompile(expr), maxLength, what}
}

func (p valuePattern) check(flag, value string) error {
	if utf8.RuneCountInString(value) > p.max || !p.re.MatchString(value) {
		return fmt.Errorf("%s %q must be %s", flag, value, p.what)
	}
	return nil
}

// The infrastructure's fields' rules (api/v1alpha1/platform_types.go).
var (
	namespaceName       = pattern(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, 63, "a namespace name (a DNS-1123 label)")
	awsRegion           = pattern(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`, 32, "an AWS region such as us-east-1")
	awsVPC              = pattern(`^vpc-[0-9a-f]{8,17}$`, 32, "a VPC ID such as vpc-0123456789abcdef0")
	azureLocation       = pattern(`^[a-z][a-z0-9]+$`, 64, "an Azure region name such as eastus")
	azureSubscriptionID = pattern(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`, 36, "a subscription ID (a UUID)")
	azureResourceGroup  = pattern(`^[-_.()a-zA-Z0-9]*[-_()a-zA-Z0-9]$`, 90, "a resource group name: letters, digits, '-', '_', '.', '(' and ')', not ending in '.'")
	azureVnetID         = pattern(`^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft.Network/virtualNetworks/[^/]+$`, 512, "a virtual network's resource ID: /subscriptions/SUB/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/NAME")
)

func checkSecretName(flag, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s %q is not a Secret name: %s", flag, name, strings.Join(errs, "; "))
	}
	return nil
}

// checkOneOf accepts an unset value (the API's default) or one of allowed.
func checkOneOf(flag, value string, allowed ...string) error {
	if value != "" && !slices.Contains(allowed, value) {
		return fmt.Errorf("%s %q: use %s", flag, value, strings.Join(allowed, ", "))
	}
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// parseGiB reads a size given in GiB (120) or as a quantity (120Gi).
func parseGiB(s string) (resource.Quantity, error) {
	if _, err := strconv.ParseUint(s, 10, 63); err == nil {
		s += "Gi"
	}
	return resource.ParseQuantity(s)
}

// wholeGiB is --flag's size in GiB, which must be whole and in [lo, hi].
func wholeGiB(flag, s string, lo, hi int64) (int64, error) {
	q, err := parseGiB(s)
	gib := q.Value() >> 30
	if err != nil || q.Value()%(1<<30) != 0 || gib < lo || gib > hi {
		return 0, fmt.Errorf("%s %q: give whole GiB from %d to %d, such as %d or %dGi", flag, s, lo, hi, lo, lo)
	}
	return gib, nil
}
