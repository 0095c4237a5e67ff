package hostnet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// Ports that a program is told to listen on later are picked at random
// from [PortRangeLow, PortRangeHigh], less the kernel's ephemeral range
// (net.ipv4.ip_local_port_range, 32768–60999 by default). Never from the
// ephemeral range itself: there the kernel also picks the source port of
// every outgoing connection, so a port found free and handed on could be a
// client socket's by the time its program binds it ("bind: address already
// in use"; seen on a host busy with many control planes, when a component
// restarted). The range stays clear of Kubernetes' well-known ports
// (10248–10259: a real node's kubelet and kube-proxy), of the NodePort
// range (30000–32767) and of 49152 and up, which the Konnectivity server
// refuses.
const (
	PortRangeLow  = 20000
	PortRangeHigh = 29999
)

// maxPortTries bounds the search when most ports of the range are taken.
const maxPortTries = 10000

// EphemeralPorts is the kernel's ephemeral port range, or its default when
// it cannot be read.
func EphemeralPorts() (low, high int) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if _, err := fmt.Sscan(string(data), &low, &high); err == nil && low > 0 && high >= low {
			return low, high
		}
	}
	return 32768, 60999
}

// ListenFreePort listens on every address on a port of the range outside
// the ephemeral range (usable), one for which taken (if given) is false. The caller
// closes the listener when the port is recorded, or hands it on.
func ListenFreePort(taken func(port int) bool) (net.Listener, error) {
	ephemeralLow, ephemeralHigh := EphemeralPorts()
	for range maxPortTries {
		port := PortRangeLow + rand.IntN(PortRangeHigh-PortRangeLow+1) //nolint:gosec // a port, not a secret
		if !usable(port, ephemeralLow, ephemeralHigh) || (taken != nil && taken(port)) {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
		if err == nil {
			return l, nil
		}
	}
	return nil, fmt.Errorf("find a free port in %d-%d outside the ephemeral range %d-%d (net.ipv4.ip_local_port_range): none in %d tries",
		PortRangeLow, PortRangeHigh, ephemeralLow, ephemeralHigh, maxPortTries)
}

// usable: port lies outside the ephemeral range, unless that range covers
// the whole of ours (a host tuned so), where any port of ours must do.
func usable(port, ephemeralLow, ephemeralHigh int) bool {
	if ephemeralLow <= PortRangeLow && ephemeralHigh >= PortRangeHigh {
		return true
	}
	return port < ephemeralLow || port > ephemeralHigh
}
