package hostnet

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
)

// RoutePrefixes lists the IPv4 prefixes of this host's routes in all
// tables (which include every local address), but the default route: what
// a network made on the host must not overlap.
func RoutePrefixes() ([]*net.IPNet, error) {
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("ip route: %w", err)
	}
	return parseRoutes(string(out)), nil
}

// parseRoutes reads the destinations of `ip -4 -o route show` lines; a
// route type before the destination (local, broadcast, …) is skipped, and
// a bare address is a /32.
func parseRoutes(out string) []*net.IPNet {
	var nets []*net.IPNet
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		switch dst {
		case "local", "broadcast", "unicast", "multicast", "unreachable", "blackhole", "prohibit", "throw", "anycast", "nat":
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if dst == "default" {
			continue
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if _, n, err := net.ParseCIDR(dst); err == nil {
			nets = append(nets, n)
		}
	}
	return nets
}

// OverlapsAny reports whether n overlaps one of others.
func OverlapsAny(n *net.IPNet, others []*net.IPNet) bool {
	for _, o := range others {
		if o.Contains(n.IP) || n.Contains(o.IP) {
			return true
		}
	}
	return false
}
