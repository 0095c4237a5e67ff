package join

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"hypershift.dev/internal/atomicfile"
)

// HostState is what a join may change on the host outside its data
// directory: the kubelet creates cgroups, iptables chains and log links and
// sets kernel parameters; containerd and CNI create network namespaces, a
// bridge and NAT rules. It is recorded before the join, so Reset removes
// exactly what the join added and puts kernel parameters back.
type HostState struct {
	// Chains lists the iptables chains of each table.
	Chains map[string][]string `json:"chains"`
	// Sysctls holds kernel parameters the kubelet and CNI set.
	Sysctls map[string]string `json:"sysctls"`
	// Netns lists the named network namespaces.
	Netns []string `json:"netns"`
	// Paths records which host directories existed.
	Paths map[string]bool `json:"paths"`
	// Cgroups lists the cgroup directories named kubepods.
	Cgroups []string `json:"cgroups"`
}

var (
	iptablesTables = []string{"filter", "nat", "mangle", "raw"}
	// The kubelet sets the first five unless told to only check them; the
	// bridge plugin turns on forwarding.
	trackedSysctls = []string{
		"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward",
	}
	// Host directories a node's processes create when missing.
	trackedPaths = []string{"/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd", "/var/run/netns", "/var/lib/kubelet"}
	netnsDir     = "/var/run/netns"
	cgroupRoot   = "/sys/fs/cgroup"
)

func hostStatePath(dataDir string) string { return filepath.Join(dataDir, "host-before.json") }

// ReadHostState snapshots the host.
func ReadHostState() (*HostState, error) {
	s := &HostState{Chains: map[string][]string{}, Sysctls: map[string]string{}, Paths: map[string]bool{}}
	for _, table := range iptablesTables {
		chains, _, err := iptablesSave(table)
		if err != nil {
			return nil, err
		}
		s.Chains[table] = chains
	}
	for _, key := range trackedSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			s.Sysctls[key] = strings.TrimSpace(string(v))
		}
	}
	s.Netns = listDir(netnsDir)
	for _, p := range trackedPaths {
		_, err := os.Lstat(p)
		s.Paths[p] = err == nil
	}
	s.Cgroups = kubepodsCgroups()
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

// iptablesSave reads a table's chains (sorted) and rules (its -A lines) with
// one iptables-save.
func iptablesSave(table string) (chains, rules []string, err error) {
	out, err := exec.Command("iptables-save", "-t", table).Output() //nolint:gosec // table is one of iptablesTables
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, nil, fmt.Errorf("iptables-save -t %s: %s", table, bytes.TrimSpace(ee.Stderr))
		}
		return nil, nil, fmt.Errorf("iptables-save: %w (install iptables)", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			chains = append(chains, name)
		case strings.HasPrefix(line, "-A "):
			rules = append(rules, line)
		}
	}
	sort.Strings(chains)
	return chains, rules, nil
}

// removeChains deletes chains of a table that were not there before: first
// the rules (of the table's current rules) that jump to them, then their
// rules, then the chains.
func removeChains(table string, chains, rules []string) []error {
	if len(chains) == 0 {
		return nil
	}
	gone := map[string]bool{}
	for _, c := range chains {
		gone[c] = true
	}
	var errs []error
	for _, rule := range rules {
		fields := strings.Fields(rule)
		target := ""
		for i, f := range fields {
			if (f == "-j" || f == "-g") && i+1 < len(fields) {
				target = fields[i+1]
			}
		}
		if !gone[target] || gone[fields[1]] {
			continue // rules inside removed chains go with the flush
		}
		args := append([]string{"-t", table, "-D"}, fields[1:]...)
		if out, err := exec.Command("iptables", args...).CombinedOutput(); err != nil { //nolint:gosec // a rule iptables-save printed
			errs = append(errs, fmt.Errorf("iptables %s: %s", strings.Join(args, " "), bytes.TrimSpace(out)))
		}
	}
	for _, c := range chains {
		_ = exec.Command("iptables", "-t", table, "-F", c).Run() //nolint:gosec // a chain iptables-save listed
	}
	for _, c := range chains {
		if out, err := exec.Command("iptables", "-t", table, "-X", c).CombinedOutput(); err != nil { //nolint:gosec // a chain iptables-save listed
			errs = append(errs, fmt.Errorf("iptables -t %s -X %s: %s", table, c, bytes.TrimSpace(out)))
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

// kubepodsCgroups lists the kubelet's top cgroups (kubepods, kubepods.slice)
// in every hierarchy.
func kubepodsCgroups() []string {
	var out []string
	for _, pattern := range []string{"*/kubepods*", "kubepods*"} {
		matches, _ := filepath.Glob(filepath.Join(cgroupRoot, pattern))
		out = append(out, matches...)
	}
	sort.Strings(out)
	return out
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) []string {
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
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
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

func pidsUsing(dir string) []int {
	self := os.Getpid()
	var pids []int
	for _, name := range listDir("/proc") {
		var pid int
		if _, err := fmt.Sscanf(name, "%d", &pid); err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}
