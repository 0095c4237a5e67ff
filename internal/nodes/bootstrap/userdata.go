package bootstrap

import (
	"bytes"
	"fmt"
	"regexp"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/cloudmeta"
)

// UserdataFormat is the `format` of a Cluster API bootstrap data Secret
// holding Userdata: cloud-init's. A user-data script (`#!` on the first
// line) is one of the formats cloud-init runs once at first boot, and the
// one `hypershift machine` runs with sh.
const UserdataFormat = "cloud-config"

// UserdataTokenFile is where the userdata puts the machine's bootstrap
// token: a file, so that the token is not in the process list while join
// runs. A machine of this host has its own /var/lib.
const UserdataTokenFile = "/var/lib/hypershift/join-token" //nolint:gosec // a path, not a credential

// plainValue is what the userdata writes between single quotes: a URL, a
// token, a hash, a version. Anything else is refused, never escaped.
var plainValue = regexp.MustCompile(`^[A-Za-z0-9._:/\[\]@+=-]+$`)

// providerIDFrom is where a machine of a platform learns its Node's name
// and provider ID (`hypershift join --provider-id-from`): from what its
// infrastructure provider reports, which nothing else on the machine
// passes on. A machine of platform Host has both from its environment
// (HYPERSHIFT_PROVIDER_ID and its host name).
var providerIDFrom = map[hypershiftv1alpha1.PlatformType]cloudmeta.Source{
	hypershiftv1alpha1.KubeVirtPlatform: cloudmeta.KubeVirt,
	hypershiftv1alpha1.AWSPlatform:      cloudmeta.AWS,
	hypershiftv1alpha1.AzurePlatform:    cloudmeta.Azure,
}

// Userdata is the first-boot userdata of a machine of platform: a shell
// script that writes the single-use token of j to UserdataTokenFile and
// runs `hypershift join` with it, the server, the CA pin and version (the
// Kubernetes version the node runs; empty: the one compiled into
// hypershift). On KubeVirt, AWS and Azure the join learns the Node's name
// and provider ID from the machine (--provider-id-from); on other
// platforms from the machine's environment.
func Userdata(j Join, version string, platform hypershiftv1alpha1.PlatformType) ([]byte, error) {
	if err := CheckUserdata(j.Server, version); err != nil {
		return nil, err
	}
	for what, v := range map[string]string{"token": j.Token.String(), "CA hash": j.CAHash} {
		if !plainValue.MatchString(v) {
			return nil, fmt.Errorf("userdata: the %s has characters a join line does not take", what)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!/bin/sh\n# hypershift join: written by the JoinConfig controller; the token is single-use.\nset -eu\numask 077\n")
	fmt.Fprintf(&b, "mkdir -p %s\n", "/var/lib/hypershift")
	fmt.Fprintf(&b, "printf '%%s\\n' '%s' > %s\n", j.Token, UserdataTokenFile)
	fmt.Fprintf(&b, "exec hypershift join --server '%s' --token-file %s --ca-cert-hash '%s'", j.Server, UserdataTokenFile, j.CAHash)
	if version != "" {
		fmt.Fprintf(&b, " --kubernetes-version '%s'", version)
	}
	if src, ok := providerIDFrom[platform]; ok {
		fmt.Fprintf(&b, " --provider-id-from %s", src)
	}
	b.WriteString("\n")
	return b.Bytes(), nil
}

// CheckUserdata refuses a server or version (empty: none) that Userdata
// would refuse, before a token is issued for it.
func CheckUserdata(server, version string) error {
	values := map[string]string{"server": server}
	if version != "" {
		values["version"] = version
	}
	for what, v := range values {
		if !plainValue.MatchString(v) {
			return fmt.Errorf("userdata: the %s %q has characters a join line does not take", what, v)
		}
	}
	return nil
}
