package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/nodes/join"
)

const networkFile = "network.json"

// DefaultCIDR is the machine network unless told otherwise.
const DefaultCIDR = "10.210.0.0/24"

// Network is the host's machine network: a bridge with the first address
// of CIDR (the machines' gateway, and the address a management plane
// publishes hosted API servers on for them); machines get the others.
type Network struct {
	CIDR    netip.Prefix `json:"cidr"`
	Bridge  string       `json:"bridge"`
	Gateway netip.Addr   `json:"gateway"`
}

// bridgeName is the bridge of the machines of dir: "hsm" and a hash of
// the directory, so that two directories (two test runs) do not share one.
func bridgeName(dir string) string { return "hsm" + shortHash(dir) }

// hostLinkName is the host side of a machine's veth pair.
func hostLinkName(dir, name string) string { return "hsv" + shortHash(dir+"\x00"+name) }

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

// EnsureNetwork makes the machine network with cidr (the recorded one when
// cidr is empty and one exists; DefaultCIDR when neither), or checks that
// the recorded one has that CIDR.
func (h Host) EnsureNetwork(cidr string) (Network, error) {
	if err := h.ensure(); err != nil {
		return Network{}, err
	}
	unlock, err := h.lock()
	if err != nil {
		return Network{}, err
	}
	defer unlock()
	n, err := h.network()
	switch {
	case err == nil:
		if cidr != "" && cidr != n.CIDR.String() {
			return n, fmt.Errorf("the machine network of %s is %s, not %s: delete its machines and the network first", h.Dir, n.CIDR, cidr)
		}
	case errors.Is(err, os.ErrNotExist):
		if cidr == "" {
			cidr = DefaultCIDR
		}
		if n, err = newNetwork(h.Dir, cidr); err != nil {
			return n, err
		}
		if err := h.saveNetwork(n); err != nil {
			return n, err
		}
	default:
		return n, err
	}
	// Made when missing (a host restart removes links): the record says
	// the bridge is ours.
	return n, ensureBridge(n)
}

func newNetwork(dir, cidr string) (Network, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return Network{}, fmt.Errorf("machine network %q: %w", cidr, err)
	}
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 29 || p.Bits() < 16 {
		return Network{}, fmt.Errorf("machine network %s: use an IPv4 CIDR from /16 to /29", p)
	}
	if !p.Addr().IsPrivate() {
		return Network{}, fmt.Errorf("machine network %s: use a private range (10/8, 172.16/12, 192.168/16)", p)
	}
	return Network{CIDR: p, Bridge: bridgeName(dir), Gateway: p.Addr().Next()}, nil
}

func (h Host) network() (Network, error) {
	var n Network
	data, err := os.ReadFile(filepath.Join(h.Dir, networkFile))
	if err != nil {
		return n, err
	}
	if err := json.Unmarshal(data, &n); err != nil {
		return n, fmt.Errorf("%s: %w", networkFile, err)
	}
	if n.Bridge != bridgeName(h.Dir) {
		return n, fmt.Errorf("%s names bridge %q, not this directory's %s", networkFile, n.Bridge, bridgeName(h.Dir))
	}
	return n, nil
}

// ErrNoNetwork is what Network's error is when the directory has no
// machine network (errors.Is).
var ErrNoNetwork = errors.New("no machine network")

// Network reads the recorded machine network.
func (h Host) Network() (Network, error) {
	n, err := h.network()
	if errors.Is(err, os.ErrNotExist) {
		return n, kindErrorf(ErrNoNetwork, "no machine network in %s: make one with `hypershift machine network`", h.Dir)
	}
	return n, err
}

func (h Host) saveNetwork(n Network) error {
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(h.Dir, networkFile), data, 0o600)
}

func ensureBridge(n Network) error {
	if join.LinkExists(n.Bridge) {
		return nil
	}
	prefix := netip.PrefixFrom(n.Gateway, n.CIDR.Bits()).String()
	for _, args := range [][]string{
		{"link", "add", n.Bridge, "type", "bridge"},
		{"addr", "add", prefix, "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNetwork removes the bridge and the record, once no machine is left.
func (h Host) DeleteNetwork() error {
	if !h.isMachinesDir() {
		return fmt.Errorf("%s is not a machines directory", h.Dir)
	}
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	if ms, _ := h.List(); len(ms) > 0 {
		return fmt.Errorf("%d machines still use the network: delete them first", len(ms))
	}
	n, err := h.network()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if join.LinkExists(n.Bridge) {
		if err := ip("link", "del", n.Bridge); err != nil {
			return err
		}
	}
	return os.Remove(filepath.Join(h.Dir, networkFile))
}

// allocate picks the lowest free address after the gateway.
func (n Network) allocate(used []Record) (netip.Addr, error) {
	taken := map[netip.Addr]bool{}
	for _, r := range used {
		taken[r.Address] = true
	}
	for a := n.Gateway.Next(); n.CIDR.Contains(a); a = a.Next() {
		if !taken[a] && a.Next().IsValid() && n.CIDR.Contains(a.Next()) { // not the broadcast address
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("the machine network %s has no free address", n.CIDR)
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil { //nolint:gosec // our arguments
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// isVeth says whether the link is a veth (what a machine's host side is).
func isVeth(name string) bool {
	out, err := exec.Command("ip", "-d", "-o", "link", "show", "dev", name).Output() //nolint:gosec // a link name from a record, one argument
	return err == nil && strings.Contains(string(out), " veth ")
}
