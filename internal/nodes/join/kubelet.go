package join

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultKubeletPort is the port a kubelet listens on unless configured
// otherwise (join --kubelet-port).
const DefaultKubeletPort = 10250

// CheckKubeletPort refuses a port outside 1-65535.
func CheckKubeletPort(port int) error {
	if port < 1 || port > 65535 {
		return fmt.Errorf("--kubelet-port %d is not a port: pass 1-65535 (default %d)", port, DefaultKubeletPort)
	}
	return nil
}

// checkNoKubelet refuses a host that already runs a kubelet: a kubelet
// process (an executable named kubelet, or hypershift's compiled-in one,
// `… component kubelet`, of another join) or a listener on the kubelet's
// well-known port or on the port this node's kubelet is to take. Both are
// read from procRoot (/proc), and only a kubelet in this network namespace
// counts: one in another (a kind node, a machine of package machine)
// shares no ports, bridge or iptables with this node, and its cgroups
// are under a root of its own.
func checkNoKubelet(procRoot string, port int) error {
	found := kubeletProcesses(procRoot)
	for _, p := range slices.Compact([]int{DefaultKubeletPort, port}) {
		if listening(procRoot, p) {
			found = append(found, fmt.Sprintf("a process listens on TCP port %d", p))
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("another kubelet runs on this host (%s): a host runs one node; stop it, or undo the other join with `hypershift join --reset --node-dir DIR`",
		strings.Join(found, "; "))
}

func kubeletProcesses(procRoot string) []string {
	self := strconv.Itoa(os.Getpid())
	selfNet, _ := os.Readlink(filepath.Join(procRoot, "self", "ns", "net"))
	var out []string
	for _, name := range listDir(procRoot) {
		if _, err := strconv.Atoi(name); err != nil || name == self {
			continue
		}
		if netns, err := os.Readlink(filepath.Join(procRoot, name, "ns", "net")); err == nil && selfNet != "" && netns != selfNet {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(procRoot, name, "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // gone, or a kernel thread
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		exe, _ := os.Readlink(filepath.Join(procRoot, name, "exe"))
		compiledIn := len(args) > 2 && args[1] == "component" && args[2] == Kubelet
		if filepath.Base(args[0]) == Kubelet || filepath.Base(exe) == Kubelet || compiledIn {
			out = append(out, fmt.Sprintf("pid %s: %s", name, strings.Join(args, " ")))
		}
	}
	return out
}

// listening reports whether a TCP socket (v4 or v6) listens on port, from
// procRoot/net/tcp{,6}: "sl local_address rem_address st …", the address
// as HEX_IP:HEX_PORT and state 0A for LISTEN.
func listening(procRoot string, port int) bool {
	want := fmt.Sprintf(":%04X", port)
	for _, file := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(filepath.Join(procRoot, "net", file))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "0A" {
				return true
			}
		}
	}
	return false
}
