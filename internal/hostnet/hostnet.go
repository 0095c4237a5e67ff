// Package hostnet finds the management host's own routable address.
package hostnet

import (
	"net"
)

// HostIPv4 returns the first global unicast IPv4 address of an interface
// that is up and not loopback, or nil.
func HostIPv4() net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipnet, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			if ip := ipnet.IP.To4(); ip != nil && ip.IsGlobalUnicast() {
				return ip
			}
		}
	}
	return nil
}
