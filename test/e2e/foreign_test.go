package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/runtime/process"
)

// foreignState is host state a node's reset must not touch, made by the
// test before the join: processes in a kubepods-named cgroup and with the
// node directory in their command line, an iptables chain and rules in
// built-in chains (v4 and v6), and a host directory a pod mounts through
// hostPath + subPath.
type foreignState struct {
	procs   map[string]*exec.Cmd
	rules   [][]string // iptables arguments after -t TABLE -A/-C/-D
	hostDir string
}

const foreignChain = "HS-E2E-FOREIGN"

func makeForeignState(t *testing.T, nodeDirs ...string) *foreignState {
	t.Helper()
	f := &foreignState{procs: map[string]*exec.Cmd{}}

	// A process in a cgroup named like a kubelet's, in every hierarchy.
	f.procs["in kubepods-foreign cgroup"] = startSleep(t, "sleep")
	cgroups := foreignCgroups(t, f.procs["in kubepods-foreign cgroup"].Process.Pid)
	t.Cleanup(func() {
		f.stop()
		for _, dir := range cgroups {
			_ = syscall.Rmdir(dir)
		}
	})
	// A process whose command line names the node directory.
	f.procs["naming the node dir"] = startSleep(t, "sleep "+strings.Join(nodeDirs, " "))

	for _, family := range []string{"iptables", "ip6tables"} {
		src, src2 := "192.0.2.99/32", "192.0.2.98/32"
		if family == "ip6tables" {
			src, src2 = "2001:db8::99/128", "2001:db8::98/128"
		}
		iptables(t, family, "-t", "filter", "-N", foreignChain)
		rules := [][]string{
			{family, "filter", foreignChain, "-j", "RETURN"},
			{family, "filter", "FORWARD", "-s", src, "-j", foreignChain},
			{family, "nat", "POSTROUTING", "-s", src2, "-j", "RETURN"},
		}
		for _, r := range rules {
			iptables(t, r[0], append([]string{"-t", r[1], "-A"}, r[2:]...)...)
		}
		f.rules = append(f.rules, rules...)
		t.Cleanup(func() {
			for _, r := range rules {
				_ = exec.Command(r[0], append([]string{"-t", r[1], "-D"}, r[2:]...)...).Run()
			}
			_ = exec.Command(family, "-t", "filter", "-X", foreignChain).Run()
		})
	}

	f.hostDir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(f.hostDir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.hostDir, "keep"), "host file\n")
	writeFile(t, filepath.Join(f.hostDir, "sub", "keep"), "host file under the subPath\n")
	return f
}

// startSleep starts `sleep 600` with argv[0] set to name.
func startSleep(t *testing.T, name string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.Args[0] = name
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// foreignCgroups puts pid into a kubepods-foreign cgroup of every
// hierarchy it can (cgroup v1: each controller; v2: the one tree).
func foreignCgroups(t *testing.T, pid int) []string {
	t.Helper()
	var made []string
	for _, h := range cgroupHierarchies("/sys/fs/cgroup") {
		dir := filepath.Join(h, "kubepods-foreign")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Logf("no foreign cgroup in %s: %v", h, err)
			continue
		}
		made = append(made, dir)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} { // empty in a new v1 cpuset
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				_ = os.WriteFile(filepath.Join(dir, f), v, 0o644)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			t.Logf("cannot move pid %d into %s: %v", pid, dir, err)
		}
	}
	if len(made) == 0 {
		t.Fatal("could not make a kubepods-foreign cgroup in any hierarchy")
	}
	return made
}

func iptables(t *testing.T, family string, args ...string) {
	t.Helper()
	if out, err := exec.Command(family, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", family, strings.Join(args, " "), err, out)
	}
}

// hostPathPod runs a pod that mounts the foreign host directory's "sub"
// through hostPath + subPath: the kubelet bind-mounts it under the node dir.
func (f *foreignState) hostPathPod(t *testing.T, kc string) {
	t.Helper()
	pod := filepath.Join(t.TempDir(), "hostpath.yaml")
	writeFile(t, pod, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: hostpath
spec:
  containers:
  - name: hello
    image: hypershift.test/hello:1
    imagePullPolicy: Never
    volumeMounts:
    - name: host
      mountPath: /data
      subPath: sub
  volumes:
  - name: host
    hostPath:
      path: %s
      type: Directory
`, f.hostDir))
	mustKubectl(t, kc, "apply", "-f", pod)
	mustKubectl(t, kc, "wait", "--for=condition=Ready", "pod/hostpath", "--timeout=120s")
}

// pids are the foreign processes, to tell them from the node's.
func (f *foreignState) pids() map[int]bool {
	out := map[int]bool{}
	for _, cmd := range f.procs {
		out[cmd.Process.Pid] = true
	}
	return out
}

// checkSurvived fails for any foreign state the reset removed.
func (f *foreignState) checkSurvived(t *testing.T) {
	t.Helper()
	for what, cmd := range f.procs {
		if !running(cmd.Process.Pid) {
			t.Errorf("join --reset killed a foreign process %s (pid %d)", what, cmd.Process.Pid)
		}
	}
	for _, r := range f.rules {
		if out, err := exec.Command(r[0], append([]string{"-t", r[1], "-C"}, r[2:]...)...).CombinedOutput(); err != nil {
			t.Errorf("join --reset removed the foreign rule %s -t %s -A %s: %s", r[0], r[1], strings.Join(r[2:], " "), out)
		}
	}
	for _, p := range []string{"keep", "sub/keep"} {
		if _, err := os.Stat(filepath.Join(f.hostDir, p)); err != nil {
			t.Errorf("join --reset deleted the host file %s a pod mounted: %v", p, err)
		}
	}
}

func (f *foreignState) stop() {
	for _, cmd := range f.procs {
		_ = cmd.Process.Kill()
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, cmd := range f.procs {
		for running(cmd.Process.Pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running reports whether pid is alive and not a zombie.
func running(pid int) bool {
	_, err := process.StartTime(pid)
	return err == nil
}

// cgroupHierarchies lists the cgroup hierarchies mounted at mnt: mnt itself
// on a unified (v2) host, which has cgroup.controllers; on v1 each
// directory under it (co-mounted controllers' symlinks skipped).
func cgroupHierarchies(mnt string) []string {
	if _, err := os.Stat(filepath.Join(mnt, "cgroup.controllers")); err == nil {
		return []string{mnt}
	}
	entries, _ := os.ReadDir(mnt)
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(mnt, e.Name()))
		}
	}
	return out
}

// topCgroups records the top-level cgroups of every hierarchy, where a
// kubelet's cgroup root (or kubepods) is made.
func topCgroups(mnt string, s hostState) {
	for _, h := range cgroupHierarchies(mnt) {
		entries, _ := os.ReadDir(h)
		var names []string
		for _, e := range entries {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		s["cgroups "+strings.TrimPrefix(h, mnt)] = strings.Join(names, " ")
	}
}

// The host comparison reads cgroup v1 (this host) and v2 layouts; this
// pins both on fake trees.
func TestTopCgroupsLayouts(t *testing.T) {
	ownDirAndPorts(t)
	mk := func(root string, dirs ...string) {
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	v2 := t.TempDir()
	mk(v2, "system.slice/x.service", "hypershift-node-ab/kubepods")
	writeFile(t, filepath.Join(v2, "cgroup.controllers"), "cpu memory pids\n")
	s := hostState{}
	topCgroups(v2, s)
	if len(s) != 1 || s["cgroups "] != "hypershift-node-ab system.slice" {
		t.Errorf("v2: %v", s)
	}

	v1 := t.TempDir()
	mk(v1, "cpu,cpuacct/kubepods", "memory/hypershift-node-ab/kubepods", "memory/process_api/1", "unified")
	if err := os.Symlink("cpu,cpuacct", filepath.Join(v1, "cpu")); err != nil {
		t.Fatal(err)
	}
	s = hostState{}
	topCgroups(v1, s)
	want := hostState{"cgroups /cpu,cpuacct": "kubepods", "cgroups /memory": "hypershift-node-ab process_api", "cgroups /unified": ""}
	if fmt.Sprint(s) != fmt.Sprint(want) {
		t.Errorf("v1: %v, want %v", s, want)
	}
}

// checkJoinRefusals runs, while this host is a node, joins that must be
// refused before they create anything: into a directory holding someone
// else's files, and onto a host where a kubelet (this node's) runs.
func checkJoinRefusals(t *testing.T, hs *cli) {
	t.Helper()
	args := joinCommandArgs(t, hs.must("create", "join-command", "--name", "r"))

	foreign := t.TempDir()
	writeFile(t, filepath.Join(foreign, "data"), "not a node's\n")
	stderr := hs.fails(append(args, "--node-dir", foreign)...)
	if !strings.Contains(stderr, "--node-dir "+foreign+" is not empty and was not made by `hypershift join`") {
		t.Errorf("join into a foreign directory: error\n%s\nwant it refused naming --node-dir", stderr)
	}
	if entries, _ := os.ReadDir(foreign); len(entries) != 1 {
		t.Errorf("the refused join wrote into %s: %v", foreign, entries)
	}

	second := filepath.Join(shortTempDir(t), "node")
	stderr = hs.fails(append(args, "--node-dir", second)...)
	if !strings.Contains(stderr, "another kubelet runs on this host") {
		t.Errorf("a second join on this host: error\n%s\nwant it refused", stderr)
	}
	if _, err := os.Stat(second); err == nil {
		t.Errorf("the refused second join created %s", second)
	}
}

// checkPodsInNodeCgroup checks that the node's pods run under the cgroup
// root the join recorded in node.json, the only cgroups a reset empties.
func checkPodsInNodeCgroup(t *testing.T, nodeDir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(nodeDir, "node.json"))
	if err != nil {
		t.Fatal(err)
	}
	var n struct {
		CgroupRoot string `json:"cgroupRoot"`
	}
	if err := json.Unmarshal(raw, &n); err != nil || !strings.HasPrefix(n.CgroupRoot, "/hypershift-node-") {
		t.Fatalf("node.json cgroupRoot = %q (%v), want /hypershift-node-…", n.CgroupRoot, err)
	}
	pids := 0
	for _, h := range cgroupHierarchies("/sys/fs/cgroup") {
		_ = filepath.WalkDir(filepath.Join(h, n.CgroupRoot), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Name() == "cgroup.procs" {
				data, _ := os.ReadFile(path)
				pids += len(strings.Fields(string(data)))
			}
			return nil
		})
	}
	if pids == 0 {
		t.Errorf("no process runs under the node's cgroup root %s although its pods run", n.CgroupRoot)
	}
}

// killShims SIGKILLs the node's containerd shims, as a crash would: their
// containers keep running, found by reset only in the node's cgroups.
func killShims(t *testing.T, nodeDir string) {
	t.Helper()
	socket := filepath.Join(nodeDir, "containerd.sock")
	killed := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != "containerd-shim-runc-v2" {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && args[i+1] == socket {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatalf("no containerd shim of %s to kill", socket)
	}
}
