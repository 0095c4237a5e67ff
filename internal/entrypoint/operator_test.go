package entrypoint

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/nodes/machine"
)

// TestOperatorFlagsValidatedFirst: bad operator flags are refused, naming
// the flag, before the operator looks for a management cluster (there is
// none here, which would be the error otherwise).
func TestOperatorFlagsValidatedFirst(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("POD_NAMESPACE", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--runtime=docker"}, `--runtime "docker": use process`},
		{[]string{"--image=x:1"}, "--image needs --runtime=kube"},
		{[]string{"--leader-elect"}, "--leader-elect needs --runtime=kube"},
		{[]string{"--etcd-storage-class=fast"}, "--etcd-storage-class needs --runtime=kube"},
		{[]string{"--runtime=kube", "--etcd-storage-size=lots"}, `--etcd-storage-size "lots" is not a positive quantity`},
		{[]string{"--runtime=kube", "--etcd-storage-size=0"}, `--etcd-storage-size "0" is not a positive quantity`},
		{[]string{"--runtime=kube", "--image=UPPER::bad"}, `--image "UPPER::bad" is not an image reference`},
		{[]string{"--runtime=kube", "--etcd-storage-class=a/b"}, `--etcd-storage-class "a/b" is not a valid StorageClass name`},
		{[]string{"--max-starting-control-planes=-1"}, "--max-starting-control-planes -1: use a number of control planes, or 0 for no limit"},
		{[]string{"--runtime=kube", "--max-starting-control-planes=4"}, "--max-starting-control-planes needs --runtime=process"},
		{[]string{"--control-plane-nice=20"}, "--control-plane-nice 20: use a nice value from 0 (same priority as the management plane) to 19 (lowest)"},
		{[]string{"--control-plane-nice=-1"}, "--control-plane-nice -1: use a nice value from 0"},
		{[]string{"--runtime=kube", "--control-plane-nice=5"}, "--control-plane-nice needs --runtime=process"},
		// Valid flags get as far as looking for the cluster.
		{[]string{"--runtime=kube", "--leader-elect", "--etcd-storage-size=20Gi"}, "no management plane found"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(t, append([]string{"--data-dir", t.TempDir(), "operator"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestMachinesDir: --machines-dir of up and operator needs root and a
// machines directory with a machine network, makes the network's gateway
// the endpoint host, and refuses another one; the operator refuses it
// with the kube runtime. Each is refused before anything starts.
func TestMachinesDir(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("POD_NAMESPACE", "")
	noNetwork := t.TempDir()
	for _, command := range []string{"up", "operator"} {
		for _, tt := range []struct {
			args []string
			root bool
			want string
		}{
			{[]string{"--machines-dir", noNetwork}, false, "--machines-dir needs root"},
			{[]string{"--machines-dir", noNetwork}, true, "has no machine network: make one with `sudo hypershift machine network --machines-dir " + noNetwork + "`"},
		} {
			euid := 1000
			if tt.root {
				euid = 0
			}
			t.Run(fmt.Sprintf("%s as user %d", command, euid), func(t *testing.T) {
				setEUID(t, euid)
				_, err := run(t, append([]string{"--data-dir", t.TempDir(), command}, tt.args...)...)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want it to contain %q", err, tt.want)
				}
			})
		}
	}
	_, err := run(t, "--data-dir", t.TempDir(), "operator", "--runtime=kube", "--machines-dir", noNetwork)
	if want := "--machines-dir needs --runtime=process"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("operator --runtime=kube --machines-dir: %v, want it to contain %q", err, want)
	}

	if h, host, err := machinesOption("", "127.0.0.1", false); h != nil || host != "127.0.0.1" || err != nil {
		t.Errorf("no --machines-dir: %v, %q, %v; want no machines and the endpoint host as given", h, host, err)
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping the cases with a machine network: making one needs root; run the tests as root")
	}
	dir := filepath.Join(t.TempDir(), "machines")
	m := &machine.Host{Dir: dir}
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	n, err := m.EnsureNetwork(fmt.Sprintf("10.214.%d.%d/28", b[0], 16*(int(b[0])%16)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.DeleteNetwork(); err != nil {
			t.Errorf("delete the network: %v", err)
		}
	})
	gateway := n.Gateway.String()
	for _, tt := range []struct {
		endpointHost string
		set          bool
		want         string // the endpoint host, or the error
	}{
		{"127.0.0.1", false, gateway},
		{gateway, true, gateway},
		{"127.0.0.1", true, "--endpoint-host 127.0.0.1: machines reach hosted API servers only through their gateway " + gateway},
		{"api.example", true, "--endpoint-host api.example: machines reach"},
	} {
		h, host, err := machinesOption(dir, tt.endpointHost, tt.set)
		switch {
		case strings.HasPrefix(tt.want, "--"):
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("--endpoint-host %s (given %v): %v, want it to contain %q", tt.endpointHost, tt.set, err, tt.want)
			}
		case err != nil || host != tt.want || h == nil || h.Dir != dir:
			t.Errorf("--endpoint-host %s (given %v): %v, %q, %v; want the machines of %s and endpoint host %s", tt.endpointHost, tt.set, h, host, err, dir, tt.want)
		}
	}
	// Refused before the management plane starts.
	_, err = run(t, "--data-dir", t.TempDir(), "up", "--machines-dir", dir, "--endpoint-host", "127.0.0.1")
	if want := "only through their gateway"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("up --machines-dir --endpoint-host 127.0.0.1: %v, want it to contain %q", err, want)
	}
}

// setEUID makes the commands see euid as the effective user ID until the
// test ends.
func setEUID(t *testing.T, euid int) {
	t.Helper()
	saved := geteuid
	geteuid = func() int { return euid }
	t.Cleanup(func() { geteuid = saved })
}
