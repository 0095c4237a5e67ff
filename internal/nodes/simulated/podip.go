package simulated

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// errNoPodIP means a node's pod range is used up.
var errNoPodIP = errors.New("no free pod IP")

// podIPs hands out pod IPs from a node's spec.podCIDR, as a host-local IPAM
// plugin would: the network address, the first address (the bridge's
// gateway) and, for IPv4, the broadcast address are never handed out; freed
// addresses are reused only after the rest of the range, so a deleted pod's
// IP does not immediately name another pod.
type podIPs struct {
	mu     sync.Mutex
	prefix netip.Prefix
	next   netip.Addr
	byIP   map[netip.Addr]types.UID
	byUID  map[types.UID]netip.Addr
}

func newPodIPs(cidr string) (*podIPs, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", cidr, err)
	}
	prefix = prefix.Masked()
	if prefix.Addr().BitLen()-prefix.Bits() < 2 {
		return nil, fmt.Errorf("pod CIDR %s is too small", cidr)
	}
	return &podIPs{
		prefix: prefix,
		next:   prefix.Addr().Next().Next(),
		byIP:   map[netip.Addr]types.UID{},
		byUID:  map[types.UID]netip.Addr{},
	}, nil
}

// usable reports whether ip may be given to a pod.
func (p *podIPs) usable(ip netip.Addr) bool {
	if !p.prefix.Contains(ip) || ip == p.prefix.Addr() || ip == p.prefix.Addr().Next() {
		return false
	}
	isBroadcast := ip.Is4() && ip.Next().IsValid() && !p.prefix.Contains(ip.Next())
	return !isBroadcast
}

// Allocate returns the pod's address, choosing one if it has none.
func (p *podIPs) Allocate(uid types.UID) (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := p.byUID[uid]; ok {
		return ip, nil
	}
	start := p.next
	ip := start
	for {
		if p.usable(ip) {
			if _, used := p.byIP[ip]; !used {
				p.byIP[ip] = uid
				p.byUID[uid] = ip
				p.next = p.wrap(ip.Next())
				return ip, nil
			}
		}
		ip = p.wrap(ip.Next())
		if ip == start {
			return netip.Addr{}, fmt.Errorf("%w in %s (%d pods)", errNoPodIP, p.prefix, len(p.byUID))
		}
	}
}

func (p *podIPs) wrap(ip netip.Addr) netip.Addr {
	if !ip.IsValid() || !p.prefix.Contains(ip) {
		return p.prefix.Addr()
	}
	return ip
}

// Reserve records an address a pod already has (after an agent restart).
// It reports false when the address is outside the range or taken by
// another pod.
func (p *podIPs) Reserve(uid types.UID, ip netip.Addr) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.usable(ip) {
		return false
	}
	if owner, used := p.byIP[ip]; used {
		return owner == uid
	}
	if old, ok := p.byUID[uid]; ok {
		delete(p.byIP, old)
	}
	p.byIP[ip] = uid
	p.byUID[uid] = ip
	return true
}

// Release frees a pod's address.
func (p *podIPs) Release(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ip, ok := p.byUID[uid]; ok {
		delete(p.byIP, ip)
		delete(p.byUID, uid)
	}
}
