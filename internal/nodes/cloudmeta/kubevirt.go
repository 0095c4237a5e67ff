package cloudmeta

import "fmt"

// lookupKubeVirt: the host name is the VirtualMachine's name (cloud-init
// sets it from the machine's metadata), so the provider ID is
// kubevirt://NAME, as cluster-api-provider-kubevirt writes it, and the
// Node's name is the same.
func lookupKubeVirt(hostname func() (string, error)) (Identity, error) {
	host, err := hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("kubevirt: host name: %w", err)
	}
	if err := checkHostname("kubevirt", "host name", host); err != nil {
		return Identity{}, err
	}
	return Identity{NodeName: host, ProviderID: "kubevirt://" + host}, nil
}
