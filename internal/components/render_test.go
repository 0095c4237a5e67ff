package components

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/pki/pkitest"
	"hypershift.dev/internal/runtime"
)

// fakePKI gives every key pair distinct, recognisable content, so tests can
// check which file carries which key without generating keys.
func fakePKI() *pki.ControlPlane { return pkitest.Named() }

// testPorts numbers the ports of r from 20001 in PortNames order.
func testPorts(r Replicas) map[string]int {
	ports := map[string]int{}
	for i, name := range PortNames(r) {
		ports[name] = 20001 + i
	}
	return ports
}

func testConfig() Config {
	return Config{
		Name:             "clusters-demo",
		Layout:           runtime.Layout{Dir: "/var/lib/hypershift/clusters/clusters-demo"},
		PKI:              fakePKI(),
		Ports:            testPorts(SingleReplica),
		EncryptionKey:    []byte("0123456789abcdef0123456789abcdef"),
		ServiceCIDR:      "172.31.0.0/16",
		ClusterCIDR:      "10.132.0.0/14",
		NodeCIDRMaskSize: 23,
	}
}

// TestRenderGolden pins each scenario's specs, with the contents of their
// files (secrets redacted, see goldenView).
func TestRenderGolden(t *testing.T) {
	tests := goldenScenarios()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, err := Render(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(goldenView(t, specs), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".golden.json"), append(got, '\n'))
		})
	}
}

// TestRenderFileContents checks that each file carries the key material its
// flag promises; golden files show key material by digest only.
func TestRenderFileContents(t *testing.T) {
	specs, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{
		"etcd-0": {"ca.crt": "etcd-ca.crt", "server.key": "etcd-server.key", "peer.crt": "etcd-peer.crt"},
		KubeAPIServer: {
			"server.crt": "apiserver.crt", "client-ca.crt": "client-ca.crt", "etcd-client.key": "etcd-client.key",
			"service-account.key": "sa.key", "service-account.pub": "sa.crt", "kubelet-ca.crt": "kubelet-ca.crt",
			"front-proxy-ca.crt":     "front-proxy-ca.crt",
			"encryption-config.yaml": "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- providers:\n  - secretbox:\n      keys:\n      - name: key1\n        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n  - identity: {}\n  resources:\n  - secrets\n",
		},
		KubeControllerManager: {"client-ca.key": "client-ca.key", "kubelet-ca.key": "kubelet-ca.key", "root-ca.crt": "root-ca.crt"},
		KonnectivityServer:    {"ca.crt": "konnectivity-ca.crt", "server.crt": "konnectivity-server.crt", "server.key": "konnectivity-server.key"},
	}
	for _, s := range specs {
		for _, f := range s.Files {
			if exp, ok := want[s.Name][f.Path]; ok && string(f.Content) != exp {
				t.Errorf("%s/%s holds %q, want %q", s.Name, f.Path, f.Content, exp)
			}
			if strings.HasSuffix(f.Path, ".key") && !f.Secret {
				t.Errorf("%s/%s is a private key but not marked secret", s.Name, f.Path)
			}
		}
	}
}

func TestRenderIsPure(t *testing.T) {
	a, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].Hash() != b[i].Hash() {
			t.Errorf("%s: two renders of one config differ", a[i].Name)
		}
	}
	changed := testConfig()
	changed.Ports = testPorts(SingleReplica)
	changed.Ports[EndpointPort]++
	c, err := Render(changed)
	if err != nil {
		t.Fatal(err)
	}
	api := slices.IndexFunc(a, func(s runtime.Spec) bool { return s.Name == KubeAPIServer })
	if a[api].Hash() == c[api].Hash() {
		t.Error("changing the API server port did not change its spec hash")
	}
}

func TestHighlyAvailableLayout(t *testing.T) {
	cfg := testConfig()
	cfg.Replicas, cfg.Ports = HighlyAvailable, testPorts(HighlyAvailable)
	specs, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	ports := map[int]string{}
	for _, s := range specs {
		count[s.Component]++
		for _, p := range s.Ports {
			if other, dup := ports[p]; dup {
				t.Errorf("port %d used by %s and %s", p, other, s.Name)
			}
			ports[p] = s.Name
		}
		if s.Component == KubeControllerManager || s.Component == KubeScheduler {
			if !slices.Contains(s.Args, "--leader-elect=true") {
				t.Errorf("%s runs replicated without leader election", s.Name)
			}
			if len(s.After) != 1 || s.After[0] != KubeAPIServerProxy {
				t.Errorf("%s starts after %v, want the API endpoint proxy", s.Name, s.After)
			}
		}
	}
	want := map[string]int{Etcd: 3, KonnectivityServer: 1, KubeAPIServer: 2, KubeAPIServerProxy: 1, KubeControllerManager: 2, KubeScheduler: 2}
	for c, n := range want {
		if count[c] != n {
			t.Errorf("%d instances of %s, want %d", count[c], c, n)
		}
	}
}

// A single-process control plane keeps every flag and file of the three
// components it folds, moved under its own directory.
func TestSingleProcessKeepsEverything(t *testing.T) {
	separate, err := Render(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.SingleProcess = true
	single, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(single) != 3 || single[0].Name != "etcd-0" || single[1].Name != KonnectivityServer || single[2].Name != KubeControlPlane {
		t.Fatalf("instances %v, want etcd-0, %s and %s", names(single), KonnectivityServer, KubeControlPlane)
	}
	if single[1].Hash() != separate[1].Hash() {
		t.Errorf("%s differs in a single-process control plane", KonnectivityServer)
	}
	cp := single[2]
	args := strings.Join(cp.Args, " ")
	files := map[string]bool{}
	for _, f := range cp.Files {
		files[f.Path] = true
	}
	for _, s := range separate[2:] {
		if !strings.Contains(args, s.Component) {
			t.Errorf("%s is not run by %s: %s", s.Component, KubeControlPlane, args)
		}
		for _, f := range s.Files {
			if !files[filepath.Join(s.Name, f.Path)] {
				t.Errorf("file %s/%s missing", s.Name, f.Path)
			}
		}
		for name, port := range s.Ports {
			if cp.Ports[s.Name+"-"+name] != port {
				t.Errorf("port %s = %d, want %d", name, cp.Ports[name], port)
			}
		}
	}
	if strings.Contains(args, cfg.Layout.Dir+"/kube-apiserver/") || !strings.Contains(args, cfg.Layout.Dir+"/kube-control-plane/kube-controller-manager/kubeconfig") {
		t.Errorf("paths not moved under %s: %s", KubeControlPlane, args)
	}
	api := separate[2]
	if cp.Readiness.Port != api.Readiness.Port || cp.Readiness.Path != api.Readiness.Path || !slices.Equal(cp.After, api.After) {
		t.Errorf("readiness %+v after %v, want the API server's", cp.Readiness, cp.After)
	}
}

// TestWithoutScheduler: a cluster without nodes runs no scheduler, single
// or highly available, and the rest of it is rendered unchanged; a
// single-process control plane keeps its one process.
func TestWithoutScheduler(t *testing.T) {
	for name, cfg := range layouts() {
		t.Run(name, func(t *testing.T) {
			with, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.WithoutScheduler = true
			without, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var want []runtime.Spec
			for _, s := range with {
				if s.Component != KubeScheduler {
					want = append(want, s)
				}
			}
			if name == "single-process" && len(want) != len(with) {
				t.Fatalf("a single-process control plane has a separate scheduler: %v", names(with))
			}
			if len(want) == len(with) && name != "single-process" {
				t.Fatalf("no scheduler rendered at all: %v", names(with))
			}
			if !slices.Equal(names(without), names(want)) {
				t.Fatalf("without scheduler: %v, want %v", names(without), names(want))
			}
			for i := range want {
				if without[i].Hash() != want[i].Hash() {
					t.Errorf("%s changed when the scheduler was left out", want[i].Name)
				}
			}
		})
	}
}

// layouts are the control-plane layouts a hosted cluster can have.
func layouts() map[string]Config {
	ha := testConfig()
	ha.Replicas, ha.Ports = HighlyAvailable, testPorts(HighlyAvailable)
	single := testConfig()
	single.SingleProcess = true
	return map[string]Config{"hosted": testConfig(), "highly-available": ha, "single-process": single}
}

func names(specs []runtime.Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// routable publishes cfg's API endpoint on a routable address, as
// `--endpoint-host 192.0.2.10` does.
func routable(cfg Config) Config {
	cfg.BindAddress = "192.0.2.10"
	return cfg
}

// TestListenersArePublishedOnly: no component listens on every interface;
// the published endpoint listens on the endpoint's address and the control
// plane's own clients reach it there.
func TestListenersArePublishedOnly(t *testing.T) {
	ha := testConfig()
	ha.Replicas, ha.Ports = HighlyAvailable, testPorts(HighlyAvailable)
	for name, cfg := range map[string]Config{"hosted": testConfig(), "highly-available": ha, "hosted-endpoint-host": routable(testConfig()), "highly-available-endpoint-host": routable(ha)} {
		t.Run(name, func(t *testing.T) {
			specs, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			endpoint := "https://" + cfg.endpointHost() + ":20001"
			for _, s := range specs {
				for _, a := range s.Args {
					if strings.Contains(a, "0.0.0.0") || strings.Contains(a, "[::]") || strings.HasSuffix(a, "=:20001") {
						t.Errorf("%s listens on every interface: %s", s.Name, a)
					}
				}
				for _, f := range s.Files {
					if f.Path == "kubeconfig" && !strings.Contains(string(f.Content), "server: "+endpoint+"\n") {
						t.Errorf("%s/kubeconfig does not reach the API at %s:\n%s", s.Name, endpoint, f.Content)
					}
				}
			}
			bound := map[string]string{}
			for _, s := range specs {
				for _, a := range s.Args {
					if v, ok := strings.CutPrefix(a, "--bind-address="); ok && s.Component == KubeAPIServer {
						bound[s.Name] = v
					}
					if v, ok := strings.CutPrefix(a, "--listen="); ok {
						bound[s.Name] = v
					}
					if v, ok := strings.CutPrefix(a, "--agent-bind-address="); ok {
						bound[s.Name] = v
					}
					for _, flag := range []string{"--health-bind-address=", "--admin-bind-address="} {
						if v, ok := strings.CutPrefix(a, flag); ok && v != loopback {
							t.Errorf("%s serves %s on %q, want loopback", s.Name, flag, v)
						}
					}
				}
			}
			want := map[string]string{KubeAPIServer: cfg.endpointHost()}
			if cfg.Replicas == HighlyAvailable {
				want = map[string]string{"kube-apiserver-0": loopback, "kube-apiserver-1": loopback, KubeAPIServerProxy: cfg.endpointHost() + ":20001"}
			}
			// Agents dial the Konnectivity server where they reach the API.
			want[KonnectivityServer] = cfg.endpointHost()
			for inst, addr := range want {
				if bound[inst] != addr {
					t.Errorf("%s listens on %q, want %q", inst, bound[inst], addr)
				}
			}
		})
	}
}

// TestPodsReplicasAreEqual: in pods, the instances of one component differ
// only in their Name, so a runtime can run them as replicas of one workload.
func TestPodsReplicasAreEqual(t *testing.T) {
	for _, r := range []Replicas{SingleReplica, HighlyAvailable} {
		specs, err := Render(inPods(testConfig(), r))
		if err != nil {
			t.Fatal(err)
		}
		first := map[string]runtime.Spec{}
		for _, s := range specs {
			if s.Component == KubeAPIServerProxy {
				t.Errorf("%s: rendered in pods, where a Service balances the API servers", s.Name)
			}
			named := s
			named.Name = ""
			f, seen := first[s.Component]
			if !seen {
				first[s.Component] = named
				continue
			}
			if !reflect.DeepEqual(f, named) {
				t.Errorf("%s differs from the first %s beyond its name", s.Name, s.Component)
			}
		}
		if got := len(first); got != 5 {
			t.Errorf("%d components in pods, want etcd, Konnectivity, API server, controller manager, scheduler", got)
		}
	}
}

// The controller manager signs kubelets' certificates for the leaf
// validity the operator was given, so they renew on the same clock as the
// control plane's own leaves; at upstream's default it renders no flag
// (existing control planes keep their hash).
func TestKubeletCertificateValidity(t *testing.T) {
	for _, tc := range []struct {
		validity time.Duration
		want     string
	}{
		{0, ""},
		{365 * 24 * time.Hour, ""},
		{3 * time.Minute, "--cluster-signing-duration=3m0s"},
	} {
		cfg := testConfig()
		cfg.KubeletCertificateValidity = tc.validity
		specs, err := Render(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, s := range specs {
			if s.Component != KubeControllerManager {
				continue
			}
			for _, a := range s.Args {
				if strings.HasPrefix(a, "--cluster-signing-duration=") {
					got = a
				}
			}
		}
		if got != tc.want {
			t.Errorf("validity %s: controller manager flag %q, want %q", tc.validity, got, tc.want)
		}
	}
}

// A hosted API server (alone or folded into one process) keeps every core:
// its start is the create and it serves the tenant's nodes. Every other
// hosted process runs Go on one thread; etcd and the API server collect at
// GOGC=50; the management plane keeps the Go defaults.
func TestGoRuntimeEnv(t *testing.T) {
	ha := testConfig()
	ha.Replicas, ha.Ports = HighlyAvailable, testPorts(HighlyAvailable)
	single := testConfig()
	single.SingleProcess = true
	for name, cfg := range map[string]Config{"single replica": testConfig(), "highly available": ha, "single process": single} {
		specs, err := Render(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			apiServer := s.Component == KubeAPIServer || s.Component == KubeControlPlane
			if got := slices.Contains(s.Env, goMaxProcs); got == apiServer {
				t.Errorf("%s: %s has env %v: GOMAXPROCS=1 %v, want %v", name, s.Name, s.Env, got, !apiServer)
			}
			wantGC := apiServer || s.Component == Etcd
			if got := slices.Contains(s.Env, goGC); got != wantGC {
				t.Errorf("%s: %s has env %v: GOGC=50 %v, want %v", name, s.Name, s.Env, got, wantGC)
			}
		}
	}
	mgmt := testConfig()
	mgmt.Management = true
	specs, err := Render(mgmt)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if len(s.Env) != 0 {
			t.Errorf("management plane: %s has env %v, want the Go defaults", s.Name, s.Env)
		}
	}
}

// TestWatchCacheOffOnlyForTheUncached: a hosted API server turns the watch
// cache off for uncachedResources and for none of WatchCached; the
// management plane's API server keeps every cache.
func TestWatchCacheOffOnlyForTheUncached(t *testing.T) {
	for _, r := range WatchCached {
		if slices.Contains(uncachedResources, r) {
			t.Errorf("%s is both cached and uncached", r)
		}
	}
	watchCacheSizes := func(cfg Config) string {
		specs, err := Render(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range specs {
			if v, ok := flagValue(s.Args, "--watch-cache-sizes"); ok && s.Component == KubeAPIServer {
				return v
			}
		}
		return ""
	}
	var off []string
	for _, size := range strings.Split(watchCacheSizes(testConfig()), ",") {
		r, ok := strings.CutSuffix(size, "#0")
		if !ok {
			t.Errorf("hosted --watch-cache-sizes entry %q does not turn a cache off", size)
		}
		off = append(off, r)
	}
	if !slices.Equal(off, uncachedResources) {
		t.Errorf("hosted API server turns off the caches of %v, want %v", off, uncachedResources)
	}
	mgmt := testConfig()
	mgmt.Management = true
	if got := watchCacheSizes(mgmt); got != "" {
		t.Errorf("management API server has --watch-cache-sizes=%s, want every cache", got)
	}
}

// flagValue is the value of the last --flag=value among args.
func flagValue(args []string, flag string) (value string, found bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			value, found = v, true
		}
	}
	return value, found
}

// TestPortRequestNamesTheUpstreamDefaults: what a runtime of pods gives
// each port (every instance has its own network) is the component's
// upstream default; a port without one asks for 0, which such a runtime
// refuses.
func TestPortRequestNamesTheUpstreamDefaults(t *testing.T) {
	got := PortRequest([]string{"endpoint", "etcd-0-client", "etcd-2-peer", "etcd-1-metrics", "kube-scheduler-1", "kube-controller-manager", "konnectivity", "konnectivity-admin", "etcd-0-gossip"})
	want := map[string]int{
		"endpoint": 6443, "etcd-0-client": 2379, "etcd-2-peer": 2380, "etcd-1-metrics": 2381, "kube-scheduler-1": 10259,
		"kube-controller-manager": 10257, "konnectivity": 8091, "konnectivity-admin": 8093, "etcd-0-gossip": 0,
	}
	for name, p := range want {
		if got[name] != p {
			t.Errorf("port %s is %d, want %d", name, got[name], p)
		}
	}
}
