package components

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/runtime"
)

// egressSocket reads the unix socket an API server's egress selector
// configuration (the file its flag names) sends `cluster` traffic to.
func egressSocket(t *testing.T, dir string, s runtime.Spec) string {
	t.Helper()
	var file string
	if v, ok := flagValue(s.Args, "--egress-selector-config-file"); ok {
		file = strings.TrimPrefix(v, filepath.Join(dir, s.Name)+"/")
	}
	for _, f := range s.Files {
		if file == "" || f.Path != file {
			continue
		}
		var cfg struct {
			APIVersion       string `json:"apiVersion"`
			Kind             string `json:"kind"`
			EgressSelections []struct {
				Name       string `json:"name"`
				Connection struct {
					ProxyProtocol string `json:"proxyProtocol"`
					Transport     struct {
						UDS struct {
							UDSName string `json:"udsName"`
						} `json:"uds"`
					} `json:"transport"`
				} `json:"connection"`
			} `json:"egressSelections"`
		}
		if err := yaml.UnmarshalStrict(f.Content, &cfg); err != nil {
			t.Fatalf("%s/egress-selector.yaml: %v", s.Name, err)
		}
		if cfg.APIVersion != "apiserver.k8s.io/v1beta1" || cfg.Kind != "EgressSelectorConfiguration" || len(cfg.EgressSelections) != 1 {
			t.Fatalf("%s/egress-selector.yaml is not one egress selection:\n%s", s.Name, f.Content)
		}
		sel := cfg.EgressSelections[0]
		if sel.Name != "cluster" || sel.Connection.ProxyProtocol != "GRPC" {
			t.Errorf("%s egress %q over %q, want cluster over GRPC", s.Name, sel.Name, sel.Connection.ProxyProtocol)
		}
		return sel.Connection.Transport.UDS.UDSName
	}
	t.Fatalf("%s has no egress selector configuration file (flag names %q)", s.Name, file)
	return ""
}

func serverSocket(t *testing.T, specs []runtime.Spec) string {
	t.Helper()
	var socket string
	n := 0
	for _, s := range specs {
		if s.Component != KonnectivityServer {
			continue
		}
		n++
		if v, ok := flagValue(s.Args, "--uds-name"); ok {
			socket = v
		}
	}
	if n != 1 {
		t.Fatalf("%d Konnectivity servers, want one per control plane", n)
	}
	return socket
}

// TestKonnectivityServesEveryAPIServer: one server per control plane, also
// a replicated or single-process one; every API server starts after it and
// sends its cluster traffic to its socket.
func TestKonnectivityServesEveryAPIServer(t *testing.T) {
	for name, cfg := range layouts() {
		t.Run(name, func(t *testing.T) {
			specs, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			socket := serverSocket(t, specs)
			apiServers := 0
			for _, s := range specs {
				if s.Component != KubeAPIServer && s.Component != KubeControlPlane {
					continue
				}
				apiServers++
				if got := egressSocket(t, cfg.Layout.Dir, s); got != socket {
					t.Errorf("%s dials %q, the server listens on %q", s.Name, got, socket)
				}
				if slices.Contains(s.After, KonnectivityServer) {
					t.Errorf("%s waits for %s: it dials the socket only when it needs it, so waiting only slows creates", s.Name, KonnectivityServer)
				}
			}
			if apiServers != max(cfg.replicas().KubeAPIServer, 1) && !cfg.SingleProcess {
				t.Errorf("%d API servers checked", apiServers)
			}
			firstAPIServer := slices.IndexFunc(specs, func(s runtime.Spec) bool {
				return s.Component == KubeAPIServer || s.Component == KubeControlPlane
			})
			if slices.Index(names(specs), KonnectivityServer) > firstAPIServer {
				t.Errorf("%s is not started before the API servers: %v", KonnectivityServer, names(specs))
			}
		})
	}
}

// TestKonnectivitySocketPath: the socket path stays within what the kernel
// takes; a deep data dir moves it up to the control plane's directory, and
// one too deep even for that is refused by name.
func TestKonnectivitySocketPath(t *testing.T) {
	tests := []struct {
		name, dir, want, err string
	}{
		{"default", "/var/lib/hypershift/clusters/clusters-demo", "/var/lib/hypershift/clusters/clusters-demo/konnectivity-server/konnectivity.sock", ""},
		{"deep data dir", "/home/someone/" + strings.Repeat("d", 40) + "/clusters/clusters-demo", "/home/someone/" + strings.Repeat("d", 40) + "/clusters/clusters-demo/konnectivity.sock", ""},
		{"too deep", "/" + strings.Repeat("d", 90) + "/clusters/clusters-demo", "", "use a shorter data dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Layout.Dir = tt.dir
			specs, err := Render(cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), KonnectivityServer) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, KonnectivityServer, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := serverSocket(t, specs)
			if got != tt.want || len(got) > maxSocketPath {
				t.Errorf("socket %s (%d bytes), want %s", got, len(got), tt.want)
			}
		})
	}
}

// TestManagementHasNoKonnectivity: the management plane has no nodes to
// tunnel to.
func TestManagementHasNoKonnectivity(t *testing.T) {
	cfg := testConfig()
	cfg.Management = true
	specs, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Component == KonnectivityServer || slices.ContainsFunc(s.Args, func(a string) bool { return strings.HasPrefix(a, "--egress-selector") }) {
			t.Errorf("management plane instance %s has Konnectivity: %v", s.Name, s.Args)
		}
	}
}
