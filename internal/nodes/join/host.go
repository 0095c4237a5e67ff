package join

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"hypershift.dev/internal/atomicfile"
)

// HostState is what a join may change on the host outside its data
// directory: the kubelet creates iptables chains and log links and sets
// kernel parameters; containerd and CNI create network namespaces, a bridge
// and NAT rules. It is recorded before the join, so Reset removes exactly
// what the join added and puts kernel parameters back. (The node's cgroups
// need no snapshot: they live under the node's own cgroup root.)
type HostState struct {
	// IPTables holds each table of each family, keyed "iptables filter",
	// "ip6tables nat", ….
	IPTables map[string]Table `json:"iptables"`
	// Sysctls holds kernel parameters the kubelet and CNI set.
	Sysctls map[string]string `json:"sysctls"`
	// Netns lists the named network namespaces.
	Netns []string `json:"netns"`
	// Paths records which host directories existed.
	Paths map[string]bool `json:"paths"`
	// Bridge records whether the CNI bridge existed.
	Bridge bool `json:"bridge"`
	// Loopback lists lo's IPv4 addresses: reset removes the API server
	// address only if join added it.
	Loopback []string `json:"loopback"`
}

// Table is an iptables table as iptables-save prints it.
type Table struct {
	// Chains lists the chains, sorted.
	Chains []string `json:"chains"`
	// Builtin lists the built-in chains (those with a policy).
	Builtin []string `json:"builtin"`
	// Rules are its -A lines, in order.
	Rules []string `json:"rules"`
}

var (
	iptablesFamilies = []string{"iptables", "ip6tables"}
	iptablesTables   = []string{"filter", "nat", "mangle", "raw"}
	// The kubelet sets the first five unless told to only check them; the
	// bridge plugin turns on forwarding; the node daemon makes bridged
	// traffic pass iptables (bridgeNetfilter); kube-proxy is configured to
	// leave route_localnet alone, which is recorded all the same.
	trackedSysctls = []string{
		"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
		bridgeNetfilter, "net/ipv4/conf/all/route_localnet",
	}
	// Host directories a node's processes create when missing.
	trackedPaths = []string{"/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd", "/var/run/netns", "/var/lib/kubelet"}
	netnsDir     = "/var/run/netns"
	cgroupMount  = "/sys/fs/cgroup"
)

// MachineMarker is the file a machine made by package machine has in its
// private /run.
const MachineMarker = "/run/hypershift-machine"

// InMachine says whether this is a machine of package machine: its
// network namespace is its own, its kernel is the host's. A node there
// records and restores only its namespace's kernel parameters (net/…).
func InMachine() bool {
	_, err := os.Stat(MachineMarker)
	return err == nil
}

// KernelWideSysctls are the tracked kernel parameters that are not per
// network namespace: a machine's host records them before its first
// machine and puts them back after its last.
func KernelWideSysctls() []string {
	var out []string
	for _, key := range trackedSysctls {
		if !strings.HasPrefix(key, "net/") {
			out = append(out, key)
		}
	}
	return out
}

// procSys is where kernel parameters are read and written.
const procSys = "/proc/sys"

// ReadSysctls reads the kernel parameters keys under root (/proc/sys),
// leaving out those that cannot be read.
func ReadSysctls(root string, keys []string) map[string]string {
	values := map[string]string{}
	for _, key := range keys {
		if v, err := os.ReadFile(filepath.Join(root, key)); err == nil {
			values[key] = strings.TrimSpace(string(v))
		}
	}
	return values
}

// RestoreSysctls writes values back under root for each of keys whose
// value differs now; a key values does not hold is left alone.
func RestoreSysctls(root string, keys []string, values map[string]string) []error {
	var errs []error
	for _, key := range keys {
		v, ok := values[key]
		if !ok {
			continue
		}
		p := filepath.Join(root, key)
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) != v {
			if err := os.WriteFile(p, []byte(v), 0o644); err != nil { //nolint:gosec // a /proc/sys file
				errs = append(errs, fmt.Errorf("restore %s: %w", key, err))
			}
		}
	}
	return errs
}

func hostStatePath(dataDir string) string { return filepath.Join(dataDir, "host-before.json") }

// ReadHostState snapshots the host. A family whose tables cannot be read
// (no ip6tables in the kernel) is left out, and left alone by Reset.
func ReadHostState() (*HostState, error) {
	s := &HostState{IPTables: map[string]Table{}, Paths: map[string]bool{}}
	for _, family := range iptablesFamilies {
		for _, table := range iptablesTables {
			t, err := iptablesSave(family, table)
			if err != nil {
				if family == "iptables" {
					return nil, err
				}
				continue
			}
			s.IPTables[family+" "+table] = t
		}
	}
	keys := trackedSysctls
	if InMachine() {
		// The machine's host records and restores the kernel-wide ones.
		keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !strings.HasPrefix(k, "net/") })
	}
	s.Sysctls = ReadSysctls(procSys, keys)
	s.Netns = listDir(netnsDir)
	for _, p := range trackedPaths {
		_, err := os.Lstat(p)
		s.Paths[p] = err == nil
	}
	s.Bridge = LinkExists(Bridge)
	lo, err := loopbackAddresses()
	if err != nil {
		return nil, err
	}
	s.Loopback = lo
	return s, nil
}

func (s *HostState) save(dataDir string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(hostStatePath(dataDir), data, 0o600)
}

func loadHostState(dataDir string) (*HostState, error) {
	data, err := os.ReadFile(hostStatePath(dataDir))
	if err != nil {
		return nil, err
	}
	s := &HostState{}
	return s, json.Unmarshal(data, s)
}

// iptablesSave reads a table with one iptables-save (or ip6tables-save).
func iptablesSave(family, table string) (Table, error) {
	out, err := exec.Command(family+"-save", "-t", table).Output() //nolint:gosec // family and table are from our lists
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Table{}, fmt.Errorf("%s-save -t %s: %s", family, table, bytes.TrimSpace(ee.Stderr))
		}
		return Table{}, fmt.Errorf("%s-save: %w (install iptables)", family, err)
	}
	return parseTable(string(out)), nil
}

func parseTable(out string) Table {
	var t Table
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line[1:])
			t.Chains = append(t.Chains, f[0])
			if len(f) > 1 && f[1] != "-" {
				t.Builtin = append(t.Builtin, f[0])
			}
		case strings.HasPrefix(line, "-A "):
			t.Rules = append(t.Rules, line)
		}
	}
	sort.Strings(t.Chains)
	return t
}

// tableCleanup plans, as iptables-restore lines, what undoes a node in a
// table now against before: delete the rules (in chains that stay) that
// jump to a chain new since before, and the rules new in built-in chains
// that name the node's bridge or CNI network; then flush and delete the new
// chains. Rules that were there before, and rules of others in built-in
// chains, stay.
func tableCleanup(before, now Table) []string {
	newChains := added(before.Chains, now.Chains)
	gone := map[string]bool{}
	for _, c := range newChains {
		gone[c] = true
	}
	builtin := map[string]bool{}
	for _, c := range now.Builtin {
		builtin[c] = true
	}
	had := map[string]bool{}
	for _, r := range before.Rules {
		had[r] = true
	}
	var lines []string
	for _, rule := range now.Rules {
		fields := strings.Fields(rule)
		chain := fields[1]
		if gone[chain] {
			continue // goes with the flush
		}
		ours := gone[ruleTarget(fields)] ||
			(builtin[chain] && !had[rule] && namesNode(rule))
		if ours {
			lines = append(lines, "-D"+strings.TrimPrefix(rule, "-A"))
		}
	}
	for _, c := range newChains {
		lines = append(lines, "-F "+c)
	}
	for _, c := range newChains {
		lines = append(lines, "-X "+c)
	}
	return lines
}

func ruleTarget(fields []string) string {
	target := ""
	for i, f := range fields {
		if (f == "-j" || f == "-g") && i+1 < len(fields) {
			target = fields[i+1]
		}
	}
	return target
}

// namesNode reports whether a rule is about the node's pod network: its
// bridge as an interface, or the CNI plugins' comment naming its network.
func namesNode(rule string) bool {
	fields := strings.Fields(rule)
	for i, f := range fields {
		if (f == "-i" || f == "-o") && i+1 < len(fields) && fields[i+1] == Bridge {
			return true
		}
	}
	return strings.Contains(rule, `name: \"`+cniNetwork+`\"`)
}

// restoreIPTables undoes the node in every table recorded before, one
// iptables-restore --noflush per line (it parses quoted comments as
// iptables-save printed them), so each failure is reported by itself.
func restoreIPTables(before *HostState) []error {
	var errs []error
	for _, family := range iptablesFamilies {
		for _, table := range iptablesTables {
			had, ok := before.IPTables[family+" "+table]
			if !ok {
				continue
			}
			now, err := iptablesSave(family, table)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, line := range tableCleanup(had, now) {
				cmd := exec.Command(family+"-restore", "--noflush") //nolint:gosec // family is from our list
				cmd.Stdin = strings.NewReader("*" + table + "\n" + line + "\nCOMMIT\n")
				if out, err := cmd.CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("%s -t %s %s: %s", family, table, line, bytes.TrimSpace(out)))
				}
			}
		}
	}
	return errs
}

// added lists what after has that before had not.
func added(before, after []string) []string {
	had := map[string]bool{}
	for _, b := range before {
		had[b] = true
	}
	var out []string
	for _, a := range after {
		if !had[a] {
			out = append(out, a)
		}
	}
	return out
}

func listDir(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// LinkExists says whether a network link of that name exists here.
func LinkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// MountsUnder lists mount points at or below dir, deepest first.
func MountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v uint8
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
