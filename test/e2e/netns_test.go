package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/testenv"
)

// netns is a network namespace the test made, joined to the host by a
// veth pair on a private /30: the host side has hostIP, the namespace side
// nsIP and a default route via hostIP. It is a second machine on a wire,
// without a second machine.
//
// The namespace is kept by a bind mount of its nsfs file under the test's
// temporary directory (`unshare --net=FILE`), not by `ip netns add`, which
// would make /var/run/netns a shared mount on the host. Programs run in it
// with `nsenter --net=FILE`, which switches the network namespace only:
// `ip netns exec` also gives the program a private mount namespace with a
// fresh /sys, which hides /sys/fs/cgroup from a kubelet and hides the
// kubelet's volume mounts from the host and from a later `join --reset`.
type netns struct {
	path             string // nsfs bind mount: nsenter --net=path
	hostLink, nsLink string
	hostIP, nsIP     net.IP
}

// newNetns makes the namespace and its veth pair; t.Cleanup removes both
// (and checks they are gone), acting only on the names it recorded.
func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: network namespaces and veth links need root (run the e2e tests as root)")
	}
	suffix := randomHex(t, 3)
	n := &netns{
		path:     filepath.Join(shortTempDir(t), "netns"),
		hostLink: "hse" + suffix + "h",
		nsLink:   "hse" + suffix + "n",
	}
	n.hostIP, n.nsIP = pickSubnet(t)
	writeFile(t, n.path, "")
	run(t, "unshare", "--net="+n.path, "true")
	t.Cleanup(func() { n.remove(t) })
	run(t, "ip", "link", "add", n.hostLink, "type", "veth", "peer", "name", n.nsLink, "netns", n.path)
	run(t, "ip", "addr", "add", n.hostIP.String()+"/30", "dev", n.hostLink)
	run(t, "ip", "link", "set", n.hostLink, "up")
	n.run(t, "ip", "link", "set", "lo", "up")
	n.run(t, "ip", "addr", "add", n.nsIP.String()+"/30", "dev", n.nsLink)
	n.run(t, "ip", "link", "set", n.nsLink, "up")
	n.run(t, "ip", "route", "add", "default", "via", n.hostIP.String())
	t.Logf("network namespace %s: %s %s <-> %s %s (default route via the host side)", n.path, n.hostLink, n.hostIP, n.nsLink, n.nsIP)
	return n
}

// remove unmounts the namespace, which ends it (and its veth pair) once
// no process runs in it, and deletes the host side of the pair if it
// stayed. Processes left in the namespace are reported, not killed: only
// what the test started runs there, and stopping it is the test's job
// (`join --reset`).
func (n *netns) remove(t *testing.T) {
	t.Helper()
	if pids := n.processes(); len(pids) > 0 {
		t.Errorf("processes still run in the test's network namespace %s: %s", n.path, strings.Join(pids, "; "))
	}
	if err := unix.Unmount(n.path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		t.Errorf("unmount the network namespace %s: %v", n.path, err)
	}
	_ = os.Remove(n.path)
	deadline := time.Now().Add(10 * time.Second)
	for linkExists(n.hostLink) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if linkExists(n.hostLink) {
		if out, err := exec.Command("ip", "link", "del", n.hostLink).CombinedOutput(); err != nil {
			t.Errorf("delete the test's veth %s: %v\n%s", n.hostLink, err, out)
		}
	}
}

// processes lists the processes whose network namespace is this one.
func (n *netns) processes() []string {
	var st unix.Stat_t
	if err := unix.Stat(n.path, &st); err != nil {
		return nil
	}
	want := fmt.Sprintf("net:[%d]", st.Ino)
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue // self, thread-self
		}
		if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "net")); err == nil && link == want {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			out = append(out, e.Name()+" "+strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// command runs a program in the namespace (network only).
func (n *netns) command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.path, "--", name}, args...)...)
}

func (n *netns) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := n.command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("in the network namespace: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// hypershift runs the binary under test in the namespace, as cli.run does
// on the host.
func (n *netns) hypershift(c *cli, args ...string) result {
	c.t.Helper()
	return c.runWith(n.command, args...)
}

// dropInbound is the one-way firewall: in the namespace, new connections
// (TCP or anything else conntrack tracks) coming in over the veth from the
// host side are dropped, whether addressed to the namespace (INPUT) or
// routed through it (FORWARD, e.g. to pods); connections the namespace
// opens, and their replies, pass. IPv6 too: the veth has link-local
// addresses.
func (n *netns) dropInbound(t *testing.T) {
	t.Helper()
	for _, family := range []string{"iptables", "ip6tables"} {
		for _, chain := range []string{"INPUT", "FORWARD"} {
			n.run(t, family, "-w", "-I", chain, "-i", n.nsLink, "-m", "conntrack", "--ctstate", "NEW",
				"-m", "comment", "--comment", "hypershift e2e: no new connections from the host side", "-j", "DROP")
		}
	}
}

// do runs f on an OS thread switched into the namespace: sockets f
// creates belong to it. The thread is switched back afterwards; if that
// fails it stays locked, and the runtime ends it with the goroutine.
func (n *netns) do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open(n.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open %s: %w", n.path, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter %s: %w", n.path, err)
			return
		}
		err = f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// greet answers every connection on l with greeting, until l is closed.
func greet(l net.Listener, greeting string) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, greeting)
			c.Close()
		}
	}()
}

// listenGreeting listens on addr in the namespace and greets every
// connection; closed when the test ends.
func (n *netns) listenGreeting(t *testing.T, addr, greeting string) {
	t.Helper()
	var l net.Listener
	if err := n.do(func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatalf("listen on %s in the network namespace: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	greet(l, greeting)
}

// readGreeting connects to addr with dial and returns what the server
// says.
func readGreeting(dial func() (net.Conn, error)) (string, error) {
	c, err := dial()
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	data, err := io.ReadAll(c)
	return string(data), err
}

// dialFromNetns opens a TCP connection from inside the namespace.
func (n *netns) dialFromNetns(addr string) func() (net.Conn, error) {
	return func() (c net.Conn, err error) {
		err = n.do(func() error { c, err = net.DialTimeout("tcp", addr, 3*time.Second); return err })
		return c, err
	}
}

func dialFromHost(addr string) func() (net.Conn, error) {
	return func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 3*time.Second) }
}

// checkDropped fails unless a connection from the host to addr times out:
// neither connected nor refused (a refusal means the packet got in).
func checkDropped(t *testing.T, addr, what string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	var ne net.Error
	switch {
	case err == nil:
		c.Close()
		t.Errorf("%s: the host connected to %s through the one-way firewall", what, addr)
	case errors.As(err, &ne) && ne.Timeout():
		// Dropped, as it should be.
	default:
		t.Errorf("%s: dialing %s from the host: %v, want a timeout (dropped); a refusal means the packet got through", what, addr, err)
	}
}

// pickSubnet picks a private /30 in 10.254.0.0/16 that overlaps no
// address or route of the host, and returns its two usable addresses.
func pickSubnet(t *testing.T) (hostIP, nsIP net.IP) {
	t.Helper()
	used := hostPrefixes(t)
	for range 50 {
		b := randomBytes(t, 2)
		base := net.IPv4(10, 254, b[0], b[1]&0xfc).To4()
		subnet := &net.IPNet{IP: base, Mask: net.CIDRMask(30, 32)}
		if hostnet.OverlapsAny(subnet, used) {
			continue
		}
		return net.IPv4(10, 254, b[0], base[3]+1).To4(), net.IPv4(10, 254, b[0], base[3]+2).To4()
	}
	t.Fatalf("no free /30 in 10.254.0.0/16: the host uses %v", used)
	return nil, nil
}

// hostPrefixes lists the IPv4 prefixes of the host's routes but the
// default route (hostnet.RoutePrefixes).
func hostPrefixes(t *testing.T) []*net.IPNet {
	t.Helper()
	nets, err := hostnet.RoutePrefixes()
	if err != nil {
		t.Fatal(err)
	}
	return nets
}

func linkExists(name string) bool {
	_, err := net.InterfaceByName(name)
	return err == nil
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func randomHex(t *testing.T, n int) string { return hex.EncodeToString(randomBytes(t, n)) }

// run runs a command on the host that has to succeed.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestNetnsHarness checks the harness the konnectivity test stands on: a
// namespace the host can reach until the firewall is up, that still opens
// connections to the host afterwards, and that leaves the host as found.
func TestNetnsHarness(t *testing.T) {
	wholeHost(t)
	if os.Geteuid() != 0 {
		t.Skip("skipping: network namespaces and veth links need root (run the e2e tests as root)")
	}
	before := readHost(t)
	var ns *netns
	t.Run("one-way firewall", func(t *testing.T) {
		ns = newNetns(t)
		inside := net.JoinHostPort(ns.nsIP.String(), fmt.Sprint(testenv.FreePort(t)))
		ns.listenGreeting(t, inside, "from the namespace")
		if got, err := readGreeting(dialFromHost(inside)); err != nil || got != "from the namespace" {
			t.Fatalf("before the firewall the host cannot reach %s: %q, %v", inside, got, err)
		}
		host, err := net.Listen("tcp", net.JoinHostPort(ns.hostIP.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		greet(host, "from the host")

		ns.dropInbound(t)
		checkDropped(t, inside, "after the firewall")
		if got, err := readGreeting(ns.dialFromNetns(host.Addr().String())); err != nil || got != "from the host" {
			t.Errorf("from the namespace to the host's %s through the firewall: %q, %v", host.Addr(), got, err)
		}
		if rules := ns.run(t, "iptables-save", "-t", "filter"); strings.Count(rules, "no new connections from the host side") != 2 {
			t.Errorf("the namespace's filter table:\n%s", rules)
		}

		// The stand-in for the cluster's upstream resolver, with the
		// namespace's address as the "cluster network": a query it sends
		// to a nameserver of /etc/resolv.conf reaches the test's server.
		upstream := startUpstreamDNS(t, hostnet.HostIPv4(), "outside.hypershift-e2e.test", net.IPv4(203, 0, 113, 9))
		if reason := redirectPodDNS(t, ns.nsIP.String()+"/32", upstream); reason != "" {
			t.Logf("not checking the DNS redirect: %s", reason)
			return
		}
		nameservers, _ := resolvConfNameservers(t)
		var got net.IP
		err = ns.do(func() error {
			c, err := net.Dial("udp", net.JoinHostPort(nameservers[0], "53"))
			if err != nil {
				return err
			}
			defer c.Close()
			got, err = queryA(c, "outside.hypershift-e2e.test.")
			return err
		})
		if err != nil || !got.Equal(net.IPv4(203, 0, 113, 9)) {
			t.Errorf("from the namespace, %s answered %v, %v; want the test upstream's 203.0.113.9 (it was asked %v)", nameservers[0], got, err, upstream.asked())
		}
	})
	if ns == nil {
		t.Fatal("the namespace was not made")
	}
	if linkExists(ns.hostLink) {
		t.Errorf("the veth %s is left after cleanup", ns.hostLink)
	}
	if _, err := os.Stat(ns.path); err == nil {
		t.Errorf("the namespace file %s is left after cleanup", ns.path)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(mounts, []byte(ns.path)) {
		t.Errorf("the namespace mount %s is left after cleanup", ns.path)
	}
	if diff := before.diff(readHost(t)); len(diff) > 0 {
		t.Errorf("the harness left the host changed:\n  %s", strings.Join(diff, "\n  "))
	}
}
