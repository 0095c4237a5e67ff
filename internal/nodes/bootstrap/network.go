package bootstrap

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusternet"
)

// Keys of the join information that describe the cluster's network: what
// a node's kubelet, kube-proxy and API server proxy are configured with.
const (
	JoinInfoServiceCIDR               = "serviceCIDR"
	JoinInfoClusterCIDR               = "clusterCIDR"
	JoinInfoClusterDNS                = "clusterDNS"
	JoinInfoClusterDomain             = "clusterDomain"
	JoinInfoAPIServerAdvertiseAddress = "apiServerAdvertiseAddress"
	JoinInfoAPIServerPort             = "apiServerPort"
)

// Network is what a node needs to know of its cluster's network.
type Network struct {
	ServiceCIDR string `json:"serviceCIDR"`
	ClusterCIDR string `json:"clusterCIDR"`
	// ClusterDNS is the kube-dns Service's address, ClusterDomain its domain.
	ClusterDNS    string `json:"clusterDNS"`
	ClusterDomain string `json:"clusterDomain"`
	// APIServerAdvertiseAddress:APIServerPort is where the node's API server
	// proxy listens (spec.networking.apiServer).
	APIServerAdvertiseAddress string `json:"apiServerAdvertiseAddress"`
	APIServerPort             int32  `json:"apiServerPort"`
}

// NetworkOf derives a node's view of a hosted cluster's networking.
func NetworkOf(n hypershiftv1alpha1.ClusterNetworking) (Network, error) {
	if len(n.ServiceNetwork) == 0 || len(n.ClusterNetwork) == 0 {
		return Network{}, fmt.Errorf("spec.networking needs a serviceNetwork and a clusterNetwork entry")
	}
	dns, err := clusternet.ClusterDNSIP(n.ServiceNetwork[0].CIDR)
	if err != nil {
		return Network{}, err
	}
	addr, port := n.APIServerAddress()
	return Network{
		ServiceCIDR:               n.ServiceNetwork[0].CIDR,
		ClusterCIDR:               n.ClusterNetwork[0].CIDR,
		ClusterDNS:                dns.String(),
		ClusterDomain:             clusternet.ClusterDomain,
		APIServerAdvertiseAddress: addr,
		APIServerPort:             port,
	}, nil
}

func (n Network) joinInfo() map[string]any {
	return map[string]any{
		JoinInfoServiceCIDR:               n.ServiceCIDR,
		JoinInfoClusterCIDR:               n.ClusterCIDR,
		JoinInfoClusterDNS:                n.ClusterDNS,
		JoinInfoClusterDomain:             n.ClusterDomain,
		JoinInfoAPIServerAdvertiseAddress: n.APIServerAdvertiseAddress,
		JoinInfoAPIServerPort:             strconv.Itoa(int(n.APIServerPort)),
	}
}

// ParseNetwork reads the network from join information data. Join
// information published by an older hypershift lacks it, and is refused:
// a node cannot run kube-proxy or its API server proxy without it.
func ParseNetwork(data map[string]string) (Network, error) {
	var missing []string
	get := func(key string) string {
		v := data[key]
		if v == "" {
			missing = append(missing, key)
		}
		return v
	}
	n := Network{
		ServiceCIDR:               get(JoinInfoServiceCIDR),
		ClusterCIDR:               get(JoinInfoClusterCIDR),
		ClusterDNS:                get(JoinInfoClusterDNS),
		ClusterDomain:             get(JoinInfoClusterDomain),
		APIServerAdvertiseAddress: get(JoinInfoAPIServerAdvertiseAddress),
	}
	port := get(JoinInfoAPIServerPort)
	if len(missing) > 0 {
		return Network{}, fmt.Errorf("%s/%s lacks %s: the cluster's operator is older than this hypershift; upgrade the management plane (`hypershift up`) so it publishes them, then join again",
			JoinInfoNamespace, JoinInfoName, strings.Join(missing, ", "))
	}
	for key, cidr := range map[string]string{JoinInfoServiceCIDR: n.ServiceCIDR, JoinInfoClusterCIDR: n.ClusterCIDR} {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return Network{}, fmt.Errorf("%s/%s %s %q is not a CIDR", JoinInfoNamespace, JoinInfoName, key, cidr)
		}
	}
	for key, ip := range map[string]string{JoinInfoClusterDNS: n.ClusterDNS, JoinInfoAPIServerAdvertiseAddress: n.APIServerAdvertiseAddress} {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			return Network{}, fmt.Errorf("%s/%s %s %q is not an IPv4 address", JoinInfoNamespace, JoinInfoName, key, ip)
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return Network{}, fmt.Errorf("%s/%s %s %q is not a port", JoinInfoNamespace, JoinInfoName, JoinInfoAPIServerPort, port)
	}
	n.APIServerPort = int32(p)
	return n, nil
}
