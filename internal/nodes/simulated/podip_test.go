package simulated

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestPodIPs(t *testing.T) {
	p, err := newPodIPs("10.132.2.0/29") // .0 network, .1 gateway, .7 broadcast: .2–.6 usable
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 5 {
		ip, err := p.Allocate(types.UID(fmt.Sprint(i)))
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		got = append(got, ip.String())
	}
	if fmt.Sprint(got) != "[10.132.2.2 10.132.2.3 10.132.2.4 10.132.2.5 10.132.2.6]" {
		t.Errorf("allocated %v", got)
	}
	if _, err := p.Allocate("full"); !errors.Is(err, errNoPodIP) {
		t.Errorf("allocating from a full range: %v, want errNoPodIP", err)
	}
	again, _ := p.Allocate("3")
	if again.String() != "10.132.2.5" {
		t.Errorf("a pod asking again got %s, want its own 10.132.2.5", again)
	}
	p.Release("1")
	ip, err := p.Allocate("new")
	if err != nil || ip.String() != "10.132.2.3" {
		t.Errorf("after release got %v %v, want the freed 10.132.2.3", ip, err)
	}
}

func TestPodIPsReuseLast(t *testing.T) {
	p, _ := newPodIPs("10.0.0.0/24")
	a, _ := p.Allocate("a")
	p.Release("a")
	b, _ := p.Allocate("b")
	if a == b {
		t.Errorf("a freed address (%s) was handed out again at once", a)
	}
}

func TestPodIPsReserve(t *testing.T) {
	p, _ := newPodIPs("10.0.0.0/24")
	if !p.Reserve("running", netip.MustParseAddr("10.0.0.2")) {
		t.Fatal("reserving a free address failed")
	}
	if p.Reserve("other", netip.MustParseAddr("10.0.0.2")) {
		t.Error("reserved an address another pod holds")
	}
	for _, bad := range []string{"10.0.0.0", "10.0.0.1", "10.0.0.255", "10.0.1.2"} {
		if p.Reserve("x", netip.MustParseAddr(bad)) {
			t.Errorf("reserved unusable address %s", bad)
		}
	}
	ip, _ := p.Allocate("new")
	if ip.String() != "10.0.0.3" {
		t.Errorf("allocated %s next to a reserved 10.0.0.2, want 10.0.0.3", ip)
	}
}

func TestPodIPsIPv6(t *testing.T) {
	p, err := newPodIPs("fd00:10:244:1::/120")
	if err != nil {
		t.Fatal(err)
	}
	ip, _ := p.Allocate("a")
	if ip.String() != "fd00:10:244:1::2" {
		t.Errorf("first IPv6 pod address %s", ip)
	}
	if !p.Reserve("b", netip.MustParseAddr("fd00:10:244:1::ff")) {
		t.Error("the last IPv6 address is usable (no broadcast)")
	}
}
