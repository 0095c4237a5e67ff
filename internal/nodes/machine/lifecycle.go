package machine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"hypershift.dev/internal/nodes/join"
)

// Create makes machine name on the host's machine network and runs its
// userdata in it, with the directory of the running hypershift first on
// PATH; the userdata's output goes to out and to UserdataLog. A machine
// whose userdata fails is kept (its log says why): Delete removes it.
func (h Host) Create(ctx context.Context, name string, userdata []byte, out io.Writer) (Record, error) {
	r, err := h.Make(name, "")
	if err != nil {
		return r, err
	}
	return r, h.runUserdata(ctx, r, userdata, out)
}

// Make makes machine name on the host's machine network, recording owner
// as its owner, and runs nothing in it (StartUserdata does). A machine
// that could not be made whole is left for Delete (or DeleteOwned) to
// remove. A name taken on the host is ErrExists.
func (h Host) Make(name, owner string) (Record, error) {
	if err := ValidateName(name); err != nil {
		return Record{}, err
	}
	return h.make(name, owner)
}

// make creates the machine, up to a running network, under the lock.
func (h Host) make(name, owner string) (Record, error) {
	n, err := h.Network()
	if err != nil {
		return Record{}, err
	}
	unlock, err := h.lock()
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	dir := h.machineDir(name)
	if _, err := os.Lstat(dir); err == nil {
		return Record{}, kindErrorf(ErrExists, "machine %s exists in %s", name, h.Dir)
	}
	existing, err := h.List()
	if err != nil {
		return Record{}, err
	}
	addr, err := n.allocate(existing)
	if err != nil {
		return Record{}, err
	}
	if err := ensureBridge(n); err != nil {
		return Record{}, err
	}
	for _, d := range []string{h.nsDir(name), h.rootDir(name)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return Record{}, err
		}
	}
	// The record comes first: Delete undoes a creation that stopped
	// half-way from it.
	r := Record{Name: name, Address: addr, HostLink: hostLinkName(h.Dir, name), Created: time.Now().UTC().Truncate(time.Second), Owner: owner}
	if err := h.save(r); err != nil {
		return r, err
	}
	if err := holdKernel(h.recordPath(name)); err != nil {
		return r, err
	}
	if err := h.makeNamespaces(r); err != nil {
		return r, fmt.Errorf("machine %s: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Stat(h.nsFile(name, "net"), &st); err != nil {
		return r, err
	}
	r.NetnsInode = st.Ino
	if err := h.save(r); err != nil {
		return r, err
	}
	if err := h.wire(r, n); err != nil {
		return r, fmt.Errorf("machine %s: %w", name, err)
	}
	return r, nil
}

// makeNamespaces makes the namespaces, kept by bind mounts of their nsfs
// files on a private mount of ns/ (unshare needs one), with the private
// directories mounted and the hostname set.
func (h Host) makeNamespaces(r Record) error {
	ns, root := h.nsDir(r.Name), h.rootDir(r.Name)
	for _, d := range privateDirs {
		if err := os.MkdirAll(filepath.Join(root, d.source), 0o755); err != nil {
			return err
		}
	}
	// A node that finds it leaves kernel-wide parameters to this host.
	if err := os.WriteFile(filepath.Join(root, "run", filepath.Base(join.MachineMarker)), []byte(r.Name+"\n"), 0o644); err != nil { //nolint:gosec // readable inside the machine
		return err
	}
	if err := unix.Mount(ns, ns, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", ns, err)
	}
	if err := unix.Mount("", ns, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", ns, err)
	}
	for _, kind := range []string{"net", "mnt", "uts"} {
		if err := os.WriteFile(filepath.Join(ns, kind), nil, 0o600); err != nil {
			return err
		}
	}
	args := []string{
		"--net=" + filepath.Join(ns, "net"), "--mount=" + filepath.Join(ns, "mnt"), "--uts=" + filepath.Join(ns, "uts"),
		"--propagation", "private", "true",
	}
	if out, err := exec.Command("unshare", args...).CombinedOutput(); err != nil { //nolint:gosec // paths of the machine's directory
		return fmt.Errorf("unshare: %w: %s", err, strings.TrimSpace(string(out)))
	}
	steps := [][]string{{"hostname", r.Name}}
	for _, d := range privateDirs {
		steps = append(steps, []string{"mount", "--bind", filepath.Join(root, d.source), d.target})
	}
	for _, step := range steps {
		if out, err := h.Command(r.Name, step[0], step[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("in the machine: %s: %w: %s", strings.Join(step, " "), err, strings.TrimSpace(string(out)))
		}
	}
	// A new mount namespace is a copy of the host's, the other machines'
	// namespace pins included: held there, a deleted machine's namespaces
	// would live on. The machine drops every ns/ of the machines directory
	// (one made meanwhile was not copied: not mounted, ignored).
	for _, m := range join.MountsUnder(h.Dir) {
		if filepath.Base(m) == "ns" {
			_ = h.Command(r.Name, "umount", "--lazy", m).Run()
		}
	}
	return nil
}

// wire connects the machine to the bridge: eth0 inside, with its address
// and a default route through the gateway.
func (h Host) wire(r Record, n Network) error {
	netns := h.nsFile(r.Name, "net")
	if err := ip("link", "add", r.HostLink, "type", "veth", "peer", "name", "eth0", "netns", netns); err != nil {
		return err
	}
	if err := ip("link", "set", r.HostLink, "master", n.Bridge, "up"); err != nil {
		return err
	}
	prefix := netip.PrefixFrom(r.Address, n.CIDR.Bits()).String()
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"addr", "add", prefix, "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"route", "add", "default", "via", n.Gateway.String()},
	} {
		if out, err := h.Command(r.Name, "ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("in the machine: ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// Command runs a program in the machine: its namespaces, working in /,
// with the running hypershift's directory first on PATH.
func (h Host) Command(name, program string, args ...string) *exec.Cmd {
	return h.CommandContext(context.Background(), name, program, args...)
}

// CommandContext is Command, interrupted (SIGINT, then killed 10 s later)
// when ctx ends.
func (h Host) CommandContext(ctx context.Context, name, program string, args ...string) *exec.Cmd {
	ns := h.nsDir(name)
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{ //nolint:gosec // the program runs in the machine, as asked
		"--net=" + filepath.Join(ns, "net"), "--mount=" + filepath.Join(ns, "mnt"), "--uts=" + filepath.Join(ns, "uts"),
		"--wd=/", "--", program,
	}, args...)...)
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "PATH="+pathWithSelf())
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// ProviderIDEnv is the variable a machine's userdata finds its provider ID
// in (Record.ProviderID); `hypershift join` registers the Node with it.
const ProviderIDEnv = "HYPERSHIFT_PROVIDER_ID"

// VolumesDirEnv is the variable a pod machine finds its hot-plug
// directory in (docs/volumes.md); `hypershift join` runs the CSI plugin
// on it.
const VolumesDirEnv = "HYPERSHIFT_VOLUMES_DIR"

// runUserdata writes the userdata where cloud-init keeps it and runs it
// with sh, the running hypershift's directory first on PATH.
func (h Host) runUserdata(ctx context.Context, r Record, userdata []byte, out io.Writer) error {
	if err := h.writeUserdata(r, userdata); err != nil {
		return err
	}
	logFile, err := os.OpenFile(h.UserdataLog(r.Name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := h.CommandContext(ctx, r.Name, "sh", UserdataPath)
	// A cloud machine learns its ID from its metadata service; here the
	// userdata's join reads it from the environment.
	cmd.Env = append(cmd.Env, ProviderIDEnv+"="+r.ProviderID())
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = io.MultiWriter(logFile, out), io.MultiWriter(logFile, out)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("machine %s: its userdata: %w (output in %s)", r.Name, err, h.UserdataLog(r.Name))
	}
	return nil
}

// pathWithSelf is PATH with the running executable's directory first.
func pathWithSelf() string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	self, err := os.Executable()
	if err != nil {
		return path
	}
	return filepath.Dir(self) + string(os.PathListSeparator) + path
}

// Delete stops the machine and removes what it was: a detached userdata
// that still runs is stopped (StartUserdata), the node joined in it is
// reset (`hypershift join --reset` in it, when it has a node; if that
// fails the machine is kept), its veth is deleted, the processes left in
// its network namespace are killed, the namespaces' bind mounts are
// removed and then its directory. The last machine's deletion on this host
// puts the kernel-wide parameters back as they were before the first. Only
// what the machine's record names, and is verified to be the machine's, is
// acted on.
func (h Host) Delete(ctx context.Context, name string, out io.Writer) error {
	return h.delete(ctx, name, nil, out)
}

// DeleteOwned is Delete of a machine whose record names owner: a machine
// of another owner, or of none (made by hand), is refused (ErrNotOwner)
// and left as it is.
func (h Host) DeleteOwned(ctx context.Context, name, owner string, out io.Writer) error {
	if owner == "" {
		return kindErrorf(ErrNotOwner, "machine %s: no owner given", name)
	}
	return h.delete(ctx, name, &owner, out)
}

func (h Host) delete(ctx context.Context, name string, owner *string, out io.Writer) error {
	if !h.isMachinesDir() {
		return fmt.Errorf("%s is not a machines directory (no %s)", h.Dir, markerFile)
	}
	r, err := h.Get(name)
	if err != nil {
		return err
	}
	if owner != nil && r.Owner != *owner {
		return kindErrorf(ErrNotOwner, "machine %s is not %s's (its record names owner %q): left as it is", name, *owner, r.Owner)
	}
	if out == nil {
		out = io.Discard
	}
	// A userdata still running (a join under way) stops before the node
	// is reset.
	if err := h.stopUserdata(name); err != nil {
		return fmt.Errorf("machine %s: stop its userdata: %w; the machine is kept", name, err)
	}
	if h.pinned(name, "mnt") && h.pinned(name, "net") && h.hasNode(name) {
		cmd := h.CommandContext(ctx, name, selfExecutable(), "join", "--reset")
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Run(); err != nil {
			// Its pods' processes may still run: the machine stays, to be
			// looked at and deleted again.
			return fmt.Errorf("join --reset in machine %s: %w; the machine is kept", name, err)
		}
	}
	var errs []error
	// The host side of the machine's eth0, verified from inside, goes at
	// once; the kernel would remove it with the namespace, later.
	if h.ownsLink(r) {
		if err := ip("link", "del", r.HostLink); err != nil {
			errs = append(errs, err)
		}
	}
	// Only the namespace the pin holds is the machine's: a record that
	// names another inode (the host's) kills nothing.
	if inode, ok := h.netnsInode(name); ok && inode == r.NetnsInode && inode != hostNetnsInode() {
		killIn(inode)
	}
	if err := h.unpin(name); err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, h.remove(r))...)
}

// remove removes the directory of a machine whose namespaces are released,
// once no mount is left under it, and releases the kernel record.
func (h Host) remove(r Record) error {
	var errs []error
	// A veth not verified above goes with the network namespace, once
	// nothing holds it: waited for, never deleted by name alone.
	veth := func() bool { return r.HostLink != "" && join.LinkExists(r.HostLink) && isVeth(r.HostLink) }
	for deadline := time.Now().Add(10 * time.Second); veth() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	if veth() {
		errs = append(errs, fmt.Errorf("machine %s: its veth %s is still there after its network namespace was released", r.Name, r.HostLink))
	}
	if mounts := join.MountsUnder(h.machineDir(r.Name)); len(mounts) > 0 {
		return errors.Join(append(errs, fmt.Errorf("machine %s: kept its directory, mounts are left under it: %s", r.Name, strings.Join(mounts, ", ")))...)
	}
	unlock, err := h.lock()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer unlock()
	if err := os.RemoveAll(h.machineDir(r.Name)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, releaseKernel(h.recordPath(r.Name)))...)
}

// ownsLink says whether the record's host link is the peer of the
// machine's eth0, as read in the machine (eth0@ifINDEX).
func (h Host) ownsLink(r Record) bool {
	if r.HostLink == "" || !join.LinkExists(r.HostLink) || !h.pinned(r.Name, "net") {
		return false
	}
	index, err := os.ReadFile(filepath.Join("/sys/class/net", r.HostLink, "ifindex"))
	if err != nil {
		return false
	}
	out, err := h.Command(r.Name, "ip", "-o", "link", "show", "dev", "eth0").Output()
	if err != nil {
		return false
	}
	f := strings.Fields(string(out))
	return len(f) > 1 && strings.TrimSuffix(f[1], ":") == "eth0@if"+strings.TrimSpace(string(index))
}

// netnsInode is the inode of the machine's pinned network namespace.
func (h Host) netnsInode(name string) (uint64, bool) {
	if !h.pinned(name, "net") {
		return 0, false
	}
	var st unix.Stat_t
	if err := unix.Stat(h.nsFile(name, "net"), &st); err != nil {
		return 0, false
	}
	return st.Ino, true
}

// hostNetnsInode is the inode of this process's network namespace.
func hostNetnsInode() uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &st); err != nil {
		return 0
	}
	return st.Ino
}

// hasNode says whether a node was joined in the machine (join's default
// node dir, inside it, is marked).
func (h Host) hasNode(name string) bool {
	_, err := os.Stat(filepath.Join(h.rootDir(name), "var-lib", "hypershift-node", ".hypershift-node"))
	return err == nil
}

func selfExecutable() string {
	if self, err := os.Executable(); err == nil {
		return self
	}
	return "hypershift"
}

// pinned says whether a namespace file of the machine is a mount (an
// nsfs bind mount keeps the namespace).
func (h Host) pinned(name, kind string) bool {
	var st unix.Statfs_t
	return unix.Statfs(h.nsFile(name, kind), &st) == nil && st.Type == unix.NSFS_MAGIC
}

// unpin unmounts the namespace files and ns/ itself.
func (h Host) unpin(name string) error {
	var errs []error
	for _, kind := range []string{"uts", "mnt", "net"} {
		if h.pinned(name, kind) {
			if err := unix.Unmount(h.nsFile(name, kind), unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", h.nsFile(name, kind), err))
			}
		}
	}
	ns := h.nsDir(name)
	for _, m := range join.MountsUnder(h.machineDir(name)) {
		if m == ns {
			if err := unix.Unmount(ns, unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w", ns, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Processes lists the pids running in a network namespace.
func Processes(netnsInode uint64) []int {
	want := fmt.Sprintf("net:[%d]", netnsInode)
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || fmt.Sprint(pid) != e.Name() {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && link == want {
			out = append(out, pid)
		}
	}
	return out
}

// killIn kills what runs in the machine's network namespace, and waits
// up to 10 s for it to be gone.
func killIn(netnsInode uint64) {
	for _, pid := range Processes(netnsInode) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(Processes(netnsInode)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
}
