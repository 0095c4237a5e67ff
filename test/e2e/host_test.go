package e2e

import (
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// hostState is what a node may change on the host, read independently of
// the code under test.
type hostState map[string]string

func readHost(t *testing.T) hostState {
	t.Helper()
	s := hostState{}
	readIPTables(t, s)
	links, _ := exec.Command("ip", "-o", "link", "show").Output()
	var names []string
	for _, line := range strings.Split(string(links), "\n") {
		if f := strings.Fields(line); len(f) > 1 && !machineLink(f[1]) {
			names = append(names, strings.TrimSuffix(f[1], ":"))
		}
	}
	sort.Strings(names)
	s["links"] = strings.Join(names, " ")
	readAddresses(s)
	topCgroups("/sys/fs/cgroup", s)
	for _, dir := range []string{"/var/run/netns", "/var/log/containers", "/var/log/pods", "/var/lib/cni", "/run/containerd"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			s[dir] = "absent"
			continue
		}
		var list []string
		for _, e := range entries {
			list = append(list, e.Name())
		}
		s[dir] = strings.Join(list, " ")
	}
	for _, key := range []string{
		"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward",
		// What kube-proxy may set: localhost NodePorts, conntrack sizes and timeouts.
		"net/ipv4/conf/all/route_localnet", "net/netfilter/nf_conntrack_max",
		"net/netfilter/nf_conntrack_tcp_timeout_established", "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
		"net/bridge/bridge-nf-call-iptables",
	} {
		v, _ := os.ReadFile("/proc/sys/" + key)
		s["sysctl "+key] = strings.TrimSpace(string(v))
	}
	return s
}

// readIPTables records every table of both families: its chains and all
// its rules (those in built-in chains included), sorted.
func readIPTables(t *testing.T, s hostState) {
	t.Helper()
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle", "raw"} {
			out, err := exec.Command(family+"-save", "-t", table).Output()
			if err != nil {
				t.Fatalf("%s-save -t %s: %v", family, table, err)
			}
			var chains, rules []string
			for _, line := range strings.Split(string(out), "\n") {
				switch {
				case strings.HasPrefix(line, ":"):
					chains = append(chains, strings.Fields(line[1:])[0])
				case strings.HasPrefix(line, "-A "):
					rules = append(rules, line)
				}
			}
			sort.Strings(chains)
			sort.Strings(rules)
			s[family+" "+table+" chains"] = strings.Join(chains, " ")
			s[family+" "+table+" rules"] = strings.Join(rules, "\n    ")
		}
	}
}

// resetWhenDone records the host and, when the test ends, resets the node
// under nodeDir if it is still there (the test failed before its own
// reset, or has none): a reset that fails or leaves the host other than
// before fails the test, rather than the next real node finding what is
// left (pods' addresses still on the CNI bridge, their chains). Call it
// before the join and return the state it recorded.
func resetWhenDone(t *testing.T, hs *cli, nodeDir string) hostState {
	t.Helper()
	before := readHost(t)
	t.Cleanup(func() {
		if _, err := os.Stat(nodeDir); err != nil {
			return
		}
		start := time.Now()
		r := hs.run("join", "--reset", "--node-dir", nodeDir)
		if r.err != nil {
			t.Errorf("join --reset when the test ended (%.1fs): %v\nstdout:\n%s\nstderr:\n%s", time.Since(start).Seconds(), r.err, r.stdout, r.stderr)
		}
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("join --reset when the test ended left the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
	})
	return before
}

// machineLink says whether a link is a machine network's bridge or a
// machine's veth (package machine's hsm… and hsv…): the tests that make
// machines check those themselves (machines_test.go), and the machine
// package's tests make some while other packages' tests run.
func machineLink(name string) bool {
	name = strings.TrimSuffix(name, ":")
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	return strings.HasPrefix(name, "hsm") || strings.HasPrefix(name, "hsv")
}

func (s hostState) diff(after hostState) []string {
	var out []string
	for k, v := range s {
		if after[k] != v {
			out = append(out, k+": before ["+v+"] after ["+after[k]+"]")
		}
	}
	sort.Strings(out)
	return out
}

// readAddresses records every interface's addresses (a node's API server
// proxy adds one to lo) and the IPv4 routes of all tables.
func readAddresses(s hostState) {
	out, _ := exec.Command("ip", "-o", "addr", "show").Output()
	var addrs []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 3 && !machineLink(f[1]) {
			addrs = append(addrs, f[1]+" "+f[3])
		}
	}
	sort.Strings(addrs)
	s["addresses"] = strings.Join(addrs, " ")
	out, _ = exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	var routes []string
	for _, r := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(r); !slices.ContainsFunc(f, machineLink) {
			routes = append(routes, r)
		}
	}
	sort.Strings(routes)
	s["routes v4"] = strings.Join(routes, "\n    ")
}
