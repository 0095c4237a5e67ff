package hostnet

import (
	"fmt"
	"net"
	"testing"
)

func TestParseRoutes(t *testing.T) {
	out := "default via 192.0.2.1 dev eth0\n" +
		"192.0.2.0/24 dev eth0 proto kernel scope link src 192.0.2.2\n" +
		"local 192.0.2.2 dev eth0 table local proto kernel scope host src 192.0.2.2\n" +
		"broadcast 192.0.2.255 dev eth0 table local proto kernel scope link src 192.0.2.2\n" +
		"unreachable\n" +
		"\n"
	got := fmt.Sprint(parseRoutes(out))
	if want := "[192.0.2.0/24 192.0.2.2/32 192.0.2.255/32]"; got != want {
		t.Errorf("parseRoutes = %s, want %s", got, want)
	}
}

func TestOverlapsAny(t *testing.T) {
	cidr := func(s string) *net.IPNet { _, n, _ := net.ParseCIDR(s); return n }
	used := []*net.IPNet{cidr("10.0.0.0/8"), cidr("192.0.2.7/32")}
	for s, want := range map[string]bool{"10.213.4.0/24": true, "192.0.2.0/24": true, "198.51.100.0/24": false} {
		if got := OverlapsAny(cidr(s), used); got != want {
			t.Errorf("OverlapsAny(%s) = %v, want %v", s, got, want)
		}
	}
}

// TestRoutePrefixesOfThisHost: this host's routes hold its own address.
func TestRoutePrefixesOfThisHost(t *testing.T) {
	ip := HostIPv4()
	if ip == nil {
		t.Skip("this host has no global IPv4 address to look for")
	}
	nets, err := RoutePrefixes()
	if err != nil {
		t.Fatal(err)
	}
	if !OverlapsAny(&net.IPNet{IP: ip, Mask: net.CIDRMask(32, 32)}, nets) {
		t.Errorf("the host's routes %v do not hold its address %s", nets, ip)
	}
}
