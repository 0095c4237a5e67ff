package own

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/nodes/simulated"
	"hypershift.dev/internal/pki/pkitest"
	"hypershift.dev/internal/releaseserver"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/workloadidentity"
)

// samples set every field of each own component's configuration away from
// its default, so the round trip exercises every flag.
var samples = map[string]components.Flags{
	endpointproxy.Name: endpointproxy.Config{
		Listen:         "192.0.2.10:6443",
		HealthListen:   "127.0.0.1:20010",
		BackendCAFile:  "/var/lib/hypershift/clusters/c/kube-apiserver-proxy/ca.crt",
		Backends:       []string{"127.0.0.1:20011", "127.0.0.1:20012"},
		InternalListen: "127.0.0.1:20013",
		WakeOnRequest:  true,
		HoldMax:        8,
		HoldTimeout:    30 * time.Second,
	},
	simulated.Component: simulated.AgentConfig{
		BootstrapKubeconfig: "/data/nodes/c-workers/simulated-agent/bootstrap.kubeconfig",
		NodePool:            "workers",
		CertDir:             "/data/nodes/c-workers/simulated-agent/pki",
		HealthAddress:       "127.0.0.1:41234",
		QPS:                 12.5,
		Burst:               25,
		ConcurrentJoins:     3,
		PodWorkers:          2,
		ServingCertificates: false,
		Verbose:             true,
	},
	releaseserver.Name: releaseserver.Config{
		Listen:          "192.0.2.10:34050",
		CertFile:        "/data/clusters/c/release-server/tls.crt",
		KeyFile:         "/data/clusters/c/release-server/tls.key",
		ClientCAFile:    "/data/clusters/c/release-server/client-ca.crt",
		APIServer:       "https://127.0.0.1:6443",
		APIServerCAFile: "/data/clusters/c/release-server/ca.crt",
		ReleasesDir:     "/opt/hypershift/releases",
	},
	workloadidentity.Name: workloadidentity.Options{
		BindAddress:       "192.0.2.10",
		Port:              34060,
		CertFile:          "/data/clusters/c/workload-identity-webhook/tls.crt",
		KeyFile:           "/data/clusters/c/workload-identity-webhook/tls.key",
		Kubeconfig:        "/data/clusters/c/workload-identity-webhook/kubeconfig",
		ClientCAFile:      "/data/clusters/c/workload-identity-webhook/client-ca.crt",
		ClientCommonNames: []string{"kube-apiserver-kubelet-client", "CN, with a comma"},
		Config: workloadidentity.Config{
			Azure: workloadidentity.AzureConfig{TenantID: "tenant", AuthorityHost: "https://login.example.com/", Audience: "api://Other"},
			AWS: workloadidentity.AWSConfig{
				AnnotationPrefix: "example.com", Region: "eu-west-1", Audience: "sts.example.com",
				TokenExpiration: 3600, RegionalSTS: true, TokenMountPath: "/var/run/secrets/aws",
			},
		},
	},
}

// TestOwnComponentsRoundTrip renders every own component's configuration
// to flags (what the controller puts in the spec) and parses them back
// (what `hypershift component NAME` runs): the same configuration must come
// back, and the defaults must render to no flags at all.
func TestOwnComponentsRoundTrip(t *testing.T) {
	registry := Components()
	if err := registry.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range registry {
		t.Run(c.Name, func(t *testing.T) {
			if !c.Own {
				t.Fatalf("%s is listed as an own component but not registered with components.Own", c.Name)
			}
			sample, ok := samples[c.Name]
			if !ok {
				t.Fatalf("own component %s has no round-trip sample: add one to samples", c.Name)
			}
			defaults, err := c.Parse(nil)
			if err != nil {
				t.Fatalf("parse no flags: %v", err)
			}
			if args := defaults.Args(); len(args) != 0 {
				t.Errorf("the defaults render to %q, want no flags", args)
			}
			dv, sv := reflect.ValueOf(defaults), reflect.ValueOf(sample)
			if dv.Type() != sv.Type() {
				t.Fatalf("sample is a %s, the parser gives a %s", sv.Type(), dv.Type())
			}
			for i := range sv.NumField() {
				if reflect.DeepEqual(sv.Field(i).Interface(), dv.Field(i).Interface()) {
					t.Errorf("sample leaves %s at its default: set it, so its flag is tested", sv.Type().Field(i).Name)
				}
			}
			args := sample.Args()
			got, err := c.Parse(args)
			if err != nil {
				t.Fatalf("parse %q: %v", args, err)
			}
			if !reflect.DeepEqual(got, sample) {
				t.Errorf("rendered %q, parsed back\n%#v\nwant\n%#v", args, got, sample)
			}
		})
	}
}

// TestRenderedProxyArgsParse: the proxy flags the control-plane renderer
// puts into a highly available spec parse back to a configuration that
// renders them unchanged.
func TestRenderedProxyArgsParse(t *testing.T) {
	ports := map[string]int{}
	for i, name := range components.PortNames(components.HighlyAvailable) {
		ports[name] = 20001 + i
	}
	specs, err := components.Render(components.Config{
		Name: "clusters-demo", Layout: runtime.Layout{Dir: "/var/lib/hypershift/clusters/clusters-demo"},
		PKI:      pkitest.Named(),
		Replicas: components.HighlyAvailable, Ports: ports,
		EncryptionKey: []byte("0123456789abcdef0123456789abcdef"),
		ServiceCIDR:   "172.31.0.0/16", ClusterCIDR: "10.132.0.0/14", NodeCIDRMaskSize: 23,
	})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(specs, func(s runtime.Spec) bool { return s.Component == endpointproxy.Name })
	if i < 0 {
		t.Fatalf("no %s in a highly available control plane", endpointproxy.Name)
	}
	cfg, err := endpointproxy.Parse(specs[i].Args)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Backends) != 2 || cfg.Listen == "" || cfg.HealthListen == "" || cfg.BackendCAFile == "" {
		t.Errorf("parsed %+v from %q", cfg, specs[i].Args)
	}
	if !slices.Equal(cfg.Args(), specs[i].Args) {
		t.Errorf("parsed and rendered again: %q, want %q", cfg.Args(), specs[i].Args)
	}
}
