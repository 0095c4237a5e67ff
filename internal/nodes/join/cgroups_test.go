package join

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The node's cgroup root is found in every hierarchy of a v1 host (symlinked
// co-mounts skipped) and in the one hierarchy of a v2 host.
func TestCgroupHierarchies(t *testing.T) {
	v2 := t.TempDir()
	for _, d := range []string{"system.slice", "user.slice"} {
		if err := os.Mkdir(filepath.Join(v2, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(v2, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := cgroupHierarchies(v2); !slices.Equal(got, []string{v2}) {
		t.Errorf("v2 hierarchies = %v, want [%s]", got, v2)
	}

	v1 := t.TempDir()
	for _, d := range []string{"cpu,cpuacct", "memory", "systemd", "unified"} {
		if err := os.Mkdir(filepath.Join(v1, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(v1, l)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{filepath.Join(v1, "cpu,cpuacct"), filepath.Join(v1, "memory"), filepath.Join(v1, "systemd"), filepath.Join(v1, "unified")}
	if got := cgroupHierarchies(v1); !slices.Equal(got, want) {
		t.Errorf("v1 hierarchies = %v, want %v", got, want)
	}

	old := cgroupMount
	t.Cleanup(func() { cgroupMount = old })
	cgroupMount = v2
	n := &Node{CgroupRoot: "/hypershift-node-0123456789ab"}
	if got := n.cgroupDirs(); !slices.Equal(got, []string{filepath.Join(v2, "hypershift-node-0123456789ab")}) {
		t.Errorf("v2 cgroup dirs = %v", got)
	}
	if err := EnsureCgroupRoot(n); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(v2, "hypershift-node-0123456789ab")); err != nil {
		t.Errorf("EnsureCgroupRoot made no cgroup: %v", err)
	}
}

// A node.json naming anything but a join-made root (the host's root cgroup,
// another kubelet's kubepods) gives no cgroup to kill in.
func TestCgroupRootValidation(t *testing.T) {
	root, err := newCgroupRoot()
	if err != nil || validCgroupRoot(root) != nil {
		t.Fatalf("newCgroupRoot = %q, %v", root, err)
	}
	for _, bad := range []string{"", "/", "/kubepods", "/hypershift-node-", "/hypershift-node-0123456789ab/..", "/x/hypershift-node-0123456789ab"} {
		if validCgroupRoot(bad) == nil {
			t.Errorf("validCgroupRoot(%q) accepted it", bad)
		}
		if dirs := (&Node{CgroupRoot: bad}).cgroupDirs(); len(dirs) != 0 {
			t.Errorf("cgroupDirs for %q = %v", bad, dirs)
		}
	}
}

func TestCgroupFileHas(t *testing.T) {
	content := "12:memory:/hypershift-node-ab12ab12/kubepods/besteffort/pod1/c1\n1:cpu:/\n0::/\n"
	if !cgroupFileHas(content, "/hypershift-node-ab12ab12") {
		t.Error("a pod of the node is not seen in its cgroup")
	}
	for _, other := range []string{"/hypershift-node-ab12", "/kubepods"} {
		if cgroupFileHas(content, other) {
			t.Errorf("the process is taken for one in %s", other)
		}
	}
}
