package dataplane

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/golden"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

func sampleConfig() Config {
	return Config{
		ServiceCIDR:      "172.31.0.0/16",
		APIServerAddress: "172.20.0.1",
		APIServerPort:    6443,
		Image:            "hypershift.dev/hypershift:v0.0.0-test",
		Konnectivity: &Konnectivity{
			ServerHost: "192.0.2.10", ServerPort: 30123,
			CA: []byte("ca-pem"), Cert: []byte("cert-pem"), Key: []byte("key-pem"),
		},
	}
}

// TestRenderGolden pins the objects applied in a hosted cluster, with and
// without the Konnectivity agent. Secret data is redacted.
func TestRenderGolden(t *testing.T) {
	noAgent := sampleConfig()
	noAgent.Konnectivity = nil
	withReleases := sampleConfig()
	withReleases.Releases = &Releases{URL: "https://192.0.2.10:31090", SHA256: map[string]string{
		"v1.37.1": strings.Repeat("ab", 32), "v1.36.3": strings.Repeat("cd", 32),
	}}
	withVolumes := sampleConfig()
	withVolumes.Volumes = &Volumes{StorageClasses: []string{"standard", "fast"}}
	for name, cfg := range map[string]Config{"with-konnectivity": sampleConfig(), "without-konnectivity": noAgent, "with-releases": withReleases, "with-volumes": withVolumes} {
		t.Run(name, func(t *testing.T) {
			objs, err := Render(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := goldenYAML(t, objs)
			golden.Check(t, filepath.Join("testdata", name+".golden.yaml"), got)
		})
	}
}

func goldenYAML(t *testing.T, objs []client.Object) []byte {
	t.Helper()
	var docs []string
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok {
			// Shown as stringData so the golden file says which keys
			// the Secret holds, never their values.
			redacted := s.DeepCopy()
			redacted.Data, redacted.StringData = nil, map[string]string{}
			for k := range s.Data {
				redacted.StringData[k] = "REDACTED"
			}
			o = redacted
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	return []byte(strings.Join(docs, "---\n"))
}

// TestRenderEveryObjectLabelled: the controller watches (and the user finds)
// the objects by the managed-by label.
func TestRenderEveryObjectLabelled(t *testing.T) {
	objs, err := Render(sampleConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetLabels()[ManagedByLabel] != ManagedBy {
			t.Errorf("%T %s has no %s=%s label", o, o.GetName(), ManagedByLabel, ManagedBy)
		}
		if o.GetObjectKind().GroupVersionKind().Kind == "" {
			t.Errorf("%T %s has no kind: server-side apply needs it", o, o.GetName())
		}
	}
}

// TestRenderSelectors: workloads and the kube-dns Service select pods by
// k8s-app only — selectors are immutable, so the managed-by label must not
// leak into them.
func TestRenderSelectors(t *testing.T) {
	objs, err := Render(sampleConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		var selector, template map[string]string
		switch w := o.(type) {
		case *appsv1.Deployment:
			selector, template = w.Spec.Selector.MatchLabels, w.Spec.Template.Labels
		case *appsv1.DaemonSet:
			selector, template = w.Spec.Selector.MatchLabels, w.Spec.Template.Labels
		case *corev1.Service:
			selector = w.Spec.Selector
		default:
			continue
		}
		if len(selector) != 1 || selector["k8s-app"] == "" {
			t.Errorf("%T %s selects %v, want k8s-app only", o, o.GetName(), selector)
		}
		if template != nil && !maps.Equal(template, selector) {
			t.Errorf("%T %s: pods labelled %v, selected by %v", o, o.GetName(), template, selector)
		}
	}
}

func TestRenderRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"bad service CIDR", func(c *Config) { c.ServiceCIDR = "172.31.0.0" }, "spec.networking.serviceNetwork[0].cidr"},
		{"service network too small", func(c *Config) { c.ServiceCIDR = "172.31.0.0/29" }, "too small"},
		{"API address not IPv4", func(c *Config) { c.APIServerAddress = "fd00::1" }, "spec.networking.apiServer.advertiseAddress"},
		{"API port", func(c *Config) { c.APIServerPort = 0 }, "spec.networking.apiServer.port"},
		{"no image", func(c *Config) { c.Image = "" }, "image"},
		{"agent without key", func(c *Config) { c.Konnectivity.Key = nil }, "konnectivity"},
		{"agent without port", func(c *Config) { c.Konnectivity.ServerPort = 0 }, "konnectivity: server port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sampleConfig()
			tc.modify(&cfg)
			if _, err := Render(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
