package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/testenv"
)

// TestMachines: two machines on this host (`hypershift machine`), each a
// network, mount and UTS namespace of its own, run the output of `create
// join-command` as userdata and become two real Ready nodes of one hosted
// cluster, named for the machines, at their own addresses; an image is
// loaded into each and a pod on each node answers `kubectl logs` through
// its kubelet; deleting the machines leaves the host as it was (iptables,
// links, addresses, routes, kernel parameters, cgroups, host
// directories), and the network goes with its last machine.
//
// A wholeHost test: its kubelets set kernel-wide parameters and add top
// cgroups, which the host comparisons of the other such tests read.
func TestMachines(t *testing.T) {
	wholeHost(t)
	requireRealNode(t)
	before := readHost(t)
	pre := newCLI(t) // machine commands use no data dir
	machinesDir := filepath.Join(testenv.ShortTempDir(t), "machines")
	machine := func(args ...string) string {
		t.Helper()
		return pre.must(append([]string{"machine", "--machines-dir", machinesDir}, args...)...)
	}
	cidr := pickMachineNetwork(t)
	out := machine("network", "--cidr", cidr)
	m := regexp.MustCompile(`on bridge (\S+); this host is (\S+) `).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("machine network does not say its bridge and the host's address:\n%s", out)
	}
	ours := []string{m[1]} // the bridge, then each machine's veth
	gateway := m[2]
	var names []string
	t.Cleanup(func() {
		for _, name := range names {
			if r := pre.run("machine", "--machines-dir", machinesDir, "delete", name); r.err != nil && !strings.Contains(r.stderr, "no machine") {
				t.Errorf("machine delete %s: %v\n%s%s", name, r.err, r.stdout, r.stderr)
			}
		}
		if r := pre.run("machine", "--machines-dir", machinesDir, "network", "--delete"); r.err != nil {
			t.Errorf("machine network --delete: %v\n%s", r.err, r.stderr)
		}
		if left := existingLinks(ours); len(left) > 0 {
			t.Errorf("machine links left on the host: %v", left)
		}
	})

	// The management plane publishes hosted API servers on the machine
	// network's host address, which the machines reach.
	hs := upCLI(t, "--endpoint-host", gateway)
	hs.must("create", "cluster", "none", "--name", "m", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("m")
	userdata := filepath.Join(t.TempDir(), "join.sh")
	writeFile(t, userdata, "set -e\n"+hs.must("create", "join-command", "--name", "m")+"\n")
	t.Cleanup(func() {
		dumpOnFailure(t, hs, "m", kc, filepath.Join(machinesDir, "m1", "root", "var-lib", "hypershift-node"))
	})
	image := buildHelloImage(t)

	addresses := map[string]string{}
	for _, name := range []string{"m1", "m2"} {
		names = append(names, name)
		start := time.Now()
		out := machine("create", name, "--userdata", userdata)
		t.Logf("machine create %s → Node Ready: %.1fs", name, time.Since(start).Seconds())
		m := regexp.MustCompile(`machine ` + name + ` \((\S+)\) created`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("machine create %s does not say its address:\n%s", name, out)
		}
		addresses[name] = m[1]
		var record struct {
			HostLink string `json:"hostLink"`
		}
		data, err := os.ReadFile(filepath.Join(machinesDir, name, "machine.json"))
		if err != nil || json.Unmarshal(data, &record) != nil || record.HostLink == "" {
			t.Fatalf("machine %s's record: %v\n%s", name, err, data)
		}
		ours = append(ours, record.HostLink)
		machine("exec", name, "--", "hypershift", "node", "load-image", image)
	}
	if addresses["m1"] == addresses["m2"] || !strings.HasPrefix(addresses["m1"], strings.TrimSuffix(cidr, "0/24")) {
		t.Errorf("machine addresses %v, want two distinct addresses of %s", addresses, cidr)
	}
	nodes := mustKubectl(t, kc, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	for name, addr := range addresses {
		if !strings.Contains(nodes, name+" "+addr+" True") {
			t.Errorf("no Ready node %s at %s:\n%s", name, addr, nodes)
		}
	}
	if list := machine("list"); !regexp.MustCompile(`(?m)^m1\s+\S+\s+hypershift-host://m1\s+[1-9]`).MatchString(list) {
		t.Errorf("machine list does not show m1 with its provider ID and processes:\n%s", list)
	}

	t.Run("a pod on each machine answers kubectl logs through its kubelet", func(t *testing.T) {
		for name := range addresses {
			pod := filepath.Join(t.TempDir(), "pod.yaml")
			writeFile(t, pod, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hello-%[1]s
spec:
  nodeName: %[1]s
  containers:
  - name: hello
    image: hypershift.test/hello:1
    imagePullPolicy: Never
`, name))
			mustKubectl(t, kc, "apply", "-f", pod)
		}
		for name := range addresses {
			mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/hello-"+name, "--timeout=120s")
			eventually(t, time.Minute, "kubectl logs hello-"+name, func() error {
				if out, err := kubectl(t, kc, "logs", "hello-"+name); err != nil || !strings.Contains(out, "hello from hello-"+name) {
					return fmt.Errorf("kubectl logs hello-%s: %s", name, outcome(out, err))
				}
				return nil
			})
		}
	})

	t.Run("deleting the machines leaves the host as it was", func(t *testing.T) {
		start := time.Now()
		machine("delete", "m1", "m2")
		t.Logf("machine delete m1 m2: %.1fs", time.Since(start).Seconds())
		if list := machine("list"); strings.Contains(list, "m1") || strings.Contains(list, "m2") {
			t.Errorf("machine list after delete:\n%s", list)
		}
		machine("network", "--delete")
		if left := existingLinks(ours); len(left) > 0 {
			t.Errorf("machine links left on the host: %v", left)
		}
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
	})
}

// pickMachineNetwork is a /24 of 10.212/16 that no route of the host
// overlaps.
func pickMachineNetwork(t *testing.T) string {
	t.Helper()
	used := hostPrefixes(t)
	for range 50 {
		b := randomBytes(t, 1)
		subnet := &net.IPNet{IP: net.IPv4(10, 212, b[0], 0).To4(), Mask: net.CIDRMask(24, 32)}
		if !overlapsAny(subnet, used) {
			return subnet.String()
		}
	}
	t.Fatalf("no free /24 in 10.212.0.0/16: the host uses %v", used)
	return ""
}

// existingLinks lists those of the named links that exist.
func existingLinks(names []string) []string {
	var out []string
	for _, name := range names {
		if _, err := os.Stat(filepath.Join("/sys/class/net", name)); err == nil {
			out = append(out, name)
		}
	}
	return out
}
