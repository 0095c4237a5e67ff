package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A hosted cluster of platform Host gets its nodes from Cluster API: its
// NodePool becomes a MachineDeployment whose machines the HostMachine
// provider makes on this host, each joining with its JoinConfig's
// userdata. The pool scales down (the machine drained and removed) and
// destroying the cluster leaves nothing of the machines on the host.
func TestHostPlatform(t *testing.T) {
	wholeHost(t)
	requireRealNode(t)
	before := readHost(t)
	pre := newCLI(t) // machine commands use no data dir
	machinesDir := filepath.Join(shortTempDir(t), "machines")
	machine := func(args ...string) string {
		t.Helper()
		return pre.must(append([]string{"machine", "--machines-dir", machinesDir}, args...)...)
	}
	machine("network", "--cidr", pickMachineNetwork(t))
	// Registered before the management plane: it runs after its `down`,
	// as a last resort for machines the operator did not delete.
	t.Cleanup(func() {
		for _, name := range machineNames(t, machinesDir) {
			t.Errorf("machine %s left after the test", name)
			pre.run("machine", "--machines-dir", machinesDir, "delete", name)
		}
		if r := pre.run("machine", "--machines-dir", machinesDir, "network", "--delete"); r.err != nil {
			t.Errorf("machine network --delete: %v\n%s", r.err, r.stderr)
		}
	})

	hs := upCLI(t, "--machines-dir", machinesDir)
	mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
	start := time.Now()
	hs.must("create", "cluster", "host", "--name", "hp", "--node-pool-replicas", "2", "--wait", "--timeout", "5m")
	t.Logf("create cluster host with 2 machines → pool Ready: %.1fs", time.Since(start).Seconds())
	kc := hs.adminKubeconfig("hp")
	t.Cleanup(func() { dumpOnFailure(t, hs, "hp", kc, "") })

	nodes := readyHostNodes(t, kc)
	if len(nodes) != 2 {
		t.Fatalf("Ready nodes with a hypershift-host:// provider ID: %v, want 2", nodes)
	}
	machines := hs.must("get", "machines")
	for _, n := range nodes {
		if !strings.Contains(machines, " "+n+" ") || !strings.Contains(machines, "hypershift-host://"+n) {
			t.Errorf("get machines does not show the machine of node %s:\n%s", n, machines)
		}
	}
	if got := machineNames(t, machinesDir); len(got) != 2 {
		t.Errorf("machines on the host: %v, want 2", got)
	}

	t.Run("scale down to one machine", func(t *testing.T) {
		start := time.Now()
		mustKubectl(t, mgmt, "-n", "clusters", "scale", "nodepool", "hp", "--replicas", "1")
		eventually(t, 3*time.Minute, "one node and one machine left", func() error {
			if n := readyHostNodes(t, kc); len(n) != 1 {
				return errorf("nodes %v", n)
			}
			if m := machineNames(t, machinesDir); len(m) != 1 {
				return errorf("machines on the host %v", m)
			}
			return nil
		})
		t.Logf("scale 2 → 1: %.1fs", time.Since(start).Seconds())
	})

	t.Run("destroying the cluster leaves the host as it was", func(t *testing.T) {
		start := time.Now()
		hs.must("destroy", "cluster", "--name", "hp")
		eventually(t, 3*time.Minute, "no machine left on the host", func() error {
			if m := machineNames(t, machinesDir); len(m) != 0 {
				return errorf("machines on the host %v", m)
			}
			return nil
		})
		t.Logf("destroy cluster with one machine: %.1fs", time.Since(start).Seconds())
		hs.must("down")
		machine("network", "--delete")
		if diff := before.diff(readHost(t)); len(diff) > 0 {
			t.Errorf("the host changed:\n  %s", strings.Join(diff, "\n  "))
		}
	})
}

// readyHostNodes names the cluster's Ready nodes whose provider ID is a
// machine of this host's.
func readyHostNodes(t *testing.T, kc string) []string {
	t.Helper()
	out := mustKubectl(t, kc, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status} {.spec.providerID}{"\n"}{end}`)
	var names []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[1] == "True" && f[2] == "hypershift-host://"+f[0] {
			names = append(names, f[0])
		}
	}
	return names
}

// machineNames lists the machines of a machines directory: its
// subdirectories with a record.
func machineNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "machine.json")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}
