// Package clusternet holds the conventions of a hosted cluster's network
// that both sides must agree on: the control plane that puts cluster DNS at
// an address, and the nodes whose kubelets point pods at it.
package clusternet

import (
	"fmt"
	"math/big"
	"net/netip"
)

// ClusterDomain is the DNS domain of every hosted cluster's Services and pods.
const ClusterDomain = "cluster.local"

// ClusterDNSIndex is the cluster DNS Service's address within the service
// network, as kubeadm picks it: the 10th.
const ClusterDNSIndex = 10

// ServiceIP is the index-th address of a service network (the 1st is the
// `kubernetes` Service, the 10th cluster DNS).
func ServiceIP(cidr string, index int64) (netip.Addr, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("spec.networking.serviceNetwork[0].cidr %q: %w", cidr, err)
	}
	prefix = prefix.Masked()
	size := new(big.Int).Lsh(big.NewInt(1), uint(prefix.Addr().BitLen()-prefix.Bits()))
	if big.NewInt(index).Cmp(size) >= 0 {
		return netip.Addr{}, fmt.Errorf("spec.networking.serviceNetwork[0].cidr %s: too small for address %d", cidr, index)
	}
	n := new(big.Int).SetBytes(prefix.Addr().AsSlice())
	n.Add(n, big.NewInt(index))
	b := n.FillBytes(make([]byte, len(prefix.Addr().AsSlice())))
	addr, _ := netip.AddrFromSlice(b)
	return addr, nil
}

// ClusterDNSIP is the cluster DNS Service's ClusterIP and the kubelet's
// clusterDNS: the ClusterDNSIndex-th address of the service network.
func ClusterDNSIP(serviceCIDR string) (netip.Addr, error) {
	return ServiceIP(serviceCIDR, ClusterDNSIndex)
}
