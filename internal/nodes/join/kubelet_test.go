package join

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A host running a kubelet (a kubelet executable, another join's compiled-in
// one, or anything on port 10250) in this network namespace is refused;
// other processes, and kubelets in other namespaces, are not.
func TestCheckNoKubelet(t *testing.T) {
	proc := func(t *testing.T, procs map[string]string, tcp string) string {
		t.Helper()
		root := t.TempDir()
		for pid, cmdline := range procs {
			if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, pid, "cmdline"), []byte(cmdline), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
			t.Fatal(err)
		}
		header := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		if err := os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(header+tcp), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	quiet := map[string]string{
		"10": "sleep\x00600\x00/var/lib/kubelet\x00",
		"11": "/usr/bin/containerd\x00",
		"12": "/usr/local/bin/hypershift\x00component\x00kube-apiserver\x00",
		"13": "", // a kernel thread
	}
	// A connection (state 01) to 10250 is not a listener.
	established := "   0: 0100007F:9C40 0100007F:280A 01 00000000:00000000 00:00000000 00000000     0        0 1\n"
	if err := checkNoKubelet(proc(t, quiet, established), DefaultKubeletPort); err != nil {
		t.Errorf("a host without kubelet refused: %v", err)
	}
	cases := map[string]struct {
		procs map[string]string
		tcp   string
		want  string
	}{
		"kubelet executable": {map[string]string{"20": "/usr/bin/kubelet\x00--config\x00/etc/k.yaml\x00"}, "", "pid 20: /usr/bin/kubelet --config /etc/k.yaml"},
		"another join":       {map[string]string{"21": "/usr/local/bin/hypershift\x00component\x00kubelet\x00--config=x\x00"}, "", "pid 21:"},
		"port 10250":         {nil, "   0: 00000000:280A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n", "listens on TCP port 10250"},
		// --kubelet-port 10350 and something listens there.
		"the chosen port": {nil, "   0: 00000000:286E 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n", "listens on TCP port 10350"},
	}
	// A kubelet in another network namespace (another machine) is not
	// this node's concern; one in this namespace is.
	root := proc(t, map[string]string{"30": "/usr/local/bin/hypershift\x00component\x00kubelet\x00"}, "")
	for pid, netns := range map[string]string{"self": "net:[4026531840]", "30": "net:[4026532999]"} {
		if err := os.MkdirAll(filepath.Join(root, pid, "ns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(netns, filepath.Join(root, pid, "ns", "net")); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkNoKubelet(root, DefaultKubeletPort); err != nil {
		t.Errorf("a kubelet in another network namespace refused: %v", err)
	}
	if err := os.Remove(filepath.Join(root, "30", "ns", "net")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("net:[4026531840]", filepath.Join(root, "30", "ns", "net")); err != nil {
		t.Fatal(err)
	}
	if err := checkNoKubelet(root, DefaultKubeletPort); err == nil {
		t.Error("a kubelet in this network namespace was not refused")
	}
	for name, tc := range cases {
		err := checkNoKubelet(proc(t, tc.procs, tc.tcp), 10350)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "another kubelet runs on this host") {
			t.Errorf("%s: checkNoKubelet = %v, want it to say %q", name, err, tc.want)
		}
	}
}
