package join

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The node's API server proxy listens on the cluster's advertise address
// (spec.networking.apiServer), a /32 join adds to lo: every node has it,
// and it routes nowhere else. (This machine's kernel has no dummy links.)
const loopback = "lo"

// loopbackAddresses lists the IPv4 addresses on lo; never nil, as nil
// stands for "not recorded".
func loopbackAddresses() ([]string, error) {
	out, err := exec.Command("ip", "-o", "-4", "addr", "show", "dev", loopback).Output()
	if err != nil {
		return nil, fmt.Errorf("ip addr show dev %s: %w", loopback, err)
	}
	addrs := []string{}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		for i, f := range fields {
			if f == "inet" && i+1 < len(fields) {
				if p, err := netip.ParsePrefix(fields[i+1]); err == nil {
					addrs = append(addrs, p.Addr().String())
				}
			}
		}
	}
	return addrs, nil
}

// ensureLoopbackAddress adds addr/32 to lo unless lo has addr already.
func ensureLoopbackAddress(addr string) error {
	have, err := loopbackAddresses()
	if err != nil {
		return err
	}
	if slices.Contains(have, addr) {
		return nil
	}
	if out, err := exec.Command("ip", "addr", "add", addr+"/32", "dev", loopback).CombinedOutput(); err != nil { //nolint:gosec // an address from the join information, validated
		return fmt.Errorf("add the API server address %s/32 to %s: %w: %s", addr, loopback, err, bytes.TrimSpace(out))
	}
	return nil
}

// removeLoopbackAddress removes addr from lo if the join added it: lo had
// it not before the join (before lists lo's addresses then; nil, in a
// record from before joins added one, keeps it).
func removeLoopbackAddress(before []string, addr string) error {
	if before == nil || addr == "" || slices.Contains(before, addr) {
		return nil
	}
	have, err := loopbackAddresses()
	if err != nil {
		return err
	}
	if !slices.Contains(have, addr) {
		return nil
	}
	if out, err := exec.Command("ip", "addr", "del", addr+"/32", "dev", loopback).CombinedOutput(); err != nil { //nolint:gosec // the address join added
		return fmt.Errorf("remove %s/32 from %s: %w: %s", addr, loopback, err, bytes.TrimSpace(out))
	}
	return nil
}

// bridgeNetfilter makes bridged traffic pass iptables: a pod reaching a
// ClusterIP whose backend is on the same bridge is answered directly over
// the bridge, and without this the reply skips the DNAT's conntrack entry.
// Recorded in host-before.json and restored by reset.
const bridgeNetfilter = "net/bridge/bridge-nf-call-iptables"

// enableBridgeNetfilter turns bridgeNetfilter on; it exists only while the
// br_netfilter module is loaded, which join does not do (a module is a
// host-wide change reset could not tell apart).
func enableBridgeNetfilter() error {
	p := filepath.Join("/proc/sys", bridgeNetfilter)
	cur, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("%s: %w: load br_netfilter (`modprobe br_netfilter`) so that pods reach Services whose pods share their node", bridgeNetfilter, err)
	}
	if strings.TrimSpace(string(cur)) == "1" {
		return nil
	}
	if err := os.WriteFile(p, []byte("1"), 0o644); err != nil { //nolint:gosec // a /proc/sys file
		return fmt.Errorf("set %s: %w", bridgeNetfilter, err)
	}
	return nil
}
