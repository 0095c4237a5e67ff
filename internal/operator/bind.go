package operator

import (
	"fmt"
	"net"
	"slices"
)

// EndpointBindAddress is the IP address hosted API endpoints listen on for
// clients that reach them at endpointHost: the host's own address (an IP,
// or the one address of this machine that a name resolves to), never every
// interface. Empty means loopback.
func EndpointBindAddress(endpointHost string) (string, error) {
	if endpointHost == "" {
		return "127.0.0.1", nil
	}
	local, err := localAddresses()
	if err != nil {
		return "", fmt.Errorf("--endpoint-host %s: list this host's addresses: %w", endpointHost, err)
	}
	candidates := []net.IP{net.ParseIP(endpointHost)}
	if candidates[0] == nil {
		candidates, err = net.LookupIP(endpointHost)
		if err != nil {
			return "", fmt.Errorf("--endpoint-host %s does not resolve: %w", endpointHost, err)
		}
		// IPv4 first: most clients try it first.
		slices.SortStableFunc(candidates, func(a, b net.IP) int {
			return boolInt(a.To4() == nil) - boolInt(b.To4() == nil)
		})
	} else if candidates[0].IsUnspecified() {
		return "", fmt.Errorf("--endpoint-host %s means every address, not one clients can reach: give this host's address (default 127.0.0.1)", endpointHost)
	}
	for _, ip := range candidates {
		if ip.IsLoopback() || slices.ContainsFunc(local, ip.Equal) {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("--endpoint-host %s (%v) is not an address of this host: hosted API servers listen on the endpoint host's address, so give one of %v", endpointHost, candidates, local)
}

func localAddresses() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	ips := make([]net.IP, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP)
		}
	}
	return ips, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
