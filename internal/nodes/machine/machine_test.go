package machine

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/nodes/join"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: machines need root (namespaces, mounts, links); run the tests as root")
	}
	for _, tool := range []string{"ip", "unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: install iproute2 and util-linux", tool)
		}
	}
}

// testHost is a machines directory of the test with a network of its own
// (a random /28 of 10.211/16), deleted when the test ends; the kernel
// record is the test's too.
func testHost(t *testing.T) (Host, Network) {
	t.Helper()
	requireRoot(t)
	kernelStateDir = t.TempDir()
	h := Host{Dir: filepath.Join(t.TempDir(), "machines")}
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	n, err := h.EnsureNetwork(fmt.Sprintf("10.211.%d.%d/28", b[0], 16*(int(b[0])%16)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ms, _ := h.List()
		for _, m := range ms {
			if err := h.Delete(context.Background(), m.Name, nil); err != nil {
				t.Errorf("delete machine %s: %v", m.Name, err)
			}
		}
		if err := h.DeleteNetwork(); err != nil {
			t.Errorf("delete the network: %v", err)
		}
		if join.LinkExists(n.Bridge) {
			t.Errorf("bridge %s left", n.Bridge)
		}
	})
	return h, n
}

// Two machines: each has its hostname, its address, private /var/lib and
// /run, reaches the other and the host; a process it started runs in it
// until it is deleted, and then nothing of it is left.
func TestMachinesAreApart(t *testing.T) {
	h, n := testHost(t)
	userdata := []byte("set -e\nhostname\nip -4 -o addr show eth0\ntouch /var/lib/made-here /run/made-here\nsetsid sleep 600 >/dev/null 2>&1 < /dev/null &\n")
	var out strings.Builder
	m1, err := h.Create(t.Context(), "m1", userdata, &out)
	if err != nil {
		t.Fatalf("create m1: %v\n%s", err, out.String())
	}
	m2, err := h.Create(t.Context(), "m2", userdata, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Address == m2.Address || !n.CIDR.Contains(m1.Address) || m1.Address == n.Gateway {
		t.Errorf("addresses %s and %s in %s (gateway %s): want two distinct machine addresses", m1.Address, m2.Address, n.CIDR, n.Gateway)
	}
	if log := out.String(); !strings.Contains(log, "m1\n") || !strings.Contains(log, m1.Address.String()+"/28") {
		t.Errorf("m1's userdata did not see hostname m1 and address %s:\n%s", m1.Address, log)
	}
	if data, _ := os.ReadFile(h.UserdataLog("m1")); string(data) != out.String() {
		t.Errorf("userdata log %q, want what the userdata printed %q", data, out.String())
	}
	for _, p := range []string{"/var/lib/made-here", "/run/made-here"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the machine's %s is on the host", p)
		}
	}
	if _, err := os.Stat(filepath.Join(h.rootDir("m1"), "var-lib", "made-here")); err != nil {
		t.Errorf("m1's /var/lib/made-here is not in its directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.rootDir("m1"), "run", filepath.Base(join.MachineMarker))); err != nil {
		t.Errorf("m1 has no %s: %v", join.MachineMarker, err)
	}
	// A closed port answers with a reset: the address is reached.
	for _, from := range []string{"host", "m2"} {
		target := net.JoinHostPort(m1.Address.String(), "9")
		var err error
		if from == "host" {
			_, err = net.DialTimeout("tcp", target, 2*time.Second)
		} else {
			out, e := h.Command("m2", "bash", "-c", "exec 3<>/dev/tcp/"+m1.Address.String()+"/9").CombinedOutput()
			err = fmt.Errorf("%w: %s", e, out)
		}
		if err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("from %s to m1's closed port 9: %v, want connection refused", from, err)
		}
	}
	if p := Processes(m1.NetnsInode); len(p) != 1 {
		t.Errorf("processes in m1: %v, want the userdata's sleep", p)
	}
	// m2, made after m1, holds nothing of m1: its deletion is whole at once.
	out2, err := h.Command("m2", "cat", "/proc/self/mountinfo").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out2), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], h.Dir+"/") {
			t.Errorf("m2's mount namespace has a mount point in the machines directory: %s", line)
		}
	}
	if err := h.Delete(t.Context(), "m1", nil); err != nil {
		t.Fatal(err)
	}
	if p := Processes(m1.NetnsInode); len(p) != 0 {
		t.Errorf("processes left in m1 after delete: %v", p)
	}
	if join.LinkExists(m1.HostLink) {
		t.Errorf("m1's veth %s left", m1.HostLink)
	}
	if _, err := os.Stat(h.machineDir("m1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("m1's directory left: %v", err)
	}
	if m := join.MountsUnder(h.Dir); len(m) != 4 {
		t.Errorf("mounts under the machines directory: %v, want m2's ns/ and its three namespace files", m)
	}
}

// Delete acts only on what a machine's record names and what is verified
// to be the machine's: a directory without a record, a record that names
// another machine, a host link that is not a veth, a process outside the
// machine are left alone.
func TestDeleteActsOnlyOnTheMachine(t *testing.T) {
	h, n := testHost(t)
	stray := filepath.Join(h.Dir, "stray")
	if err := os.MkdirAll(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stray, "keep"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(t.Context(), "stray", nil); err == nil || !strings.Contains(err.Error(), "no machine stray") {
		t.Errorf("delete of a directory without a record: %v, want refused", err)
	}
	if _, err := os.Stat(filepath.Join(stray, "keep")); err != nil {
		t.Errorf("the unrecorded directory was touched: %v", err)
	}

	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outside.Process.Kill(); _ = outside.Wait() })
	m, err := h.Create(t.Context(), "m", []byte("true\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A record edited to name the bridge as the machine's host link, and
	// the host's network namespace as its own.
	edited := m
	edited.HostLink = n.Bridge
	edited.NetnsInode = hostNetnsInode()
	if err := h.save(edited); err != nil {
		t.Fatal(err)
	}
	// Another machine's record copied in: it names m, not "copy".
	if err := os.MkdirAll(h.machineDir("copy"), 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(h.machineDir("copy"), recordFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Delete(t.Context(), "copy", nil); err == nil || !strings.Contains(err.Error(), `names "m"`) {
		t.Errorf("delete of a record that names another machine: %v, want refused", err)
	}
	if err := h.Delete(t.Context(), "m", nil); err != nil {
		t.Fatal(err)
	}
	if !join.LinkExists(n.Bridge) {
		t.Error("deleting a machine whose record names the bridge removed the bridge")
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process outside the machine was killed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(stray, "keep")); err != nil {
		t.Errorf("the unrecorded directory was touched: %v", err)
	}
	// m's own veth goes with its namespace (the kernel's cleanup runs
	// after the last reference is gone).
	for deadline := time.Now().Add(10 * time.Second); join.LinkExists(m.HostLink) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if join.LinkExists(m.HostLink) {
		t.Errorf("m's veth %s left", m.HostLink)
	}
	_ = os.RemoveAll(stray)
	_ = os.RemoveAll(h.machineDir("copy"))
}

// A name that is not a DNS label, a second machine of one name, a
// directory that is not a machines directory, and a network that is not
// private are refused before anything is made.
func TestRefusals(t *testing.T) {
	for _, name := range []string{"", "M1", "-a", "a_b", strings.Repeat("a", 41), "../x"} {
		if err := ValidateName(name); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	for _, cidr := range []string{"8.8.8.0/24", "10.0.0.0/8", "10.1.2.0/30", "fd00::/64", "x"} {
		if _, err := newNetwork("/d", cidr); err == nil {
			t.Errorf("network %s accepted", cidr)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := (Host{Dir: dir}).ensure(); err == nil || !strings.Contains(err.Error(), "not a machines directory") {
		t.Errorf("a non-empty directory taken as a machines directory: %v", err)
	}
	h, _ := testHost(t)
	if _, err := h.Create(t.Context(), "a", []byte("true\n"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(t.Context(), "a", []byte("true\n"), nil); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second machine a: %v, want refused", err)
	}
	if err := h.DeleteNetwork(); err == nil {
		t.Error("the network was deleted under a machine")
	}
	var out strings.Builder
	if _, err := h.Create(t.Context(), "failing", []byte("echo about to fail\nexit 3\n"), &out); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing userdata: %v, want its exit status", err)
	}
	if _, err := h.Get("failing"); err != nil {
		t.Errorf("the machine of a failing userdata is not kept for its log: %v", err)
	}
}

// The kernel-wide parameters are recorded before the first machine of the
// host and put back after the last, whichever directory they are in.
func TestKernelParametersComeBackAfterTheLastMachine(t *testing.T) {
	kernelStateDir = t.TempDir()
	procSys = t.TempDir()
	key := join.KernelWideSysctls()[0]
	write := func(v string) {
		t.Helper()
		p := filepath.Join(procSys, key)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		data, _ := os.ReadFile(filepath.Join(procSys, key))
		return strings.TrimSpace(string(data))
	}
	records := t.TempDir()
	a, b := filepath.Join(records, "a"), filepath.Join(records, "b")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("0")
	if err := holdKernel(a); err != nil {
		t.Fatal(err)
	}
	write("1") // a's kubelet
	if err := holdKernel(b); err != nil {
		t.Fatal(err)
	}
	if err := releaseKernel(a); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "1" {
		t.Errorf("%s = %s after the first of two machines went, want 1 (b still runs)", key, got)
	}
	// b's record is gone without a release (its directory removed by
	// hand): the next release counts it out.
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(records, "c")
	if err := os.WriteFile(c, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := holdKernel(c); err != nil {
		t.Fatal(err)
	}
	if err := releaseKernel(c); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "0" {
		t.Errorf("%s = %s after the last machine, want 0 as before the first", key, got)
	}
	if _, err := os.Stat(kernelStatePath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the kernel record is kept after the last machine: %v", err)
	}
}
