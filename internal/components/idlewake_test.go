package components

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"hypershift.dev/internal/runtime"
)

// renderIdleWake renders the test control plane of replicas, its idle-wake
// ports from firstPort on, without IdleWake (plain) and with it (specs);
// cfg is the config with IdleWake.
func renderIdleWake(t *testing.T, replicas Replicas, firstPort int) (cfg Config, plain, specs []runtime.Spec) {
	t.Helper()
	cfg = testConfig()
	cfg.Replicas = replicas
	cfg.Ports = testPorts(replicas)
	for i, name := range IdleWakePortNames(replicas) {
		cfg.Ports[name] = firstPort + i
	}
	plain, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.IdleWake = true
	if specs, err = Render(cfg); err != nil {
		t.Fatal(err)
	}
	return cfg, plain, specs
}

// TestIdleWakeFrontsASingleAPIServer: with IdleWake the endpoint proxy
// takes the published port in front of the one API server, holds clients
// while the control plane sleeps, and the controllers reach the API at its
// internal port; without it nothing changes.
func TestIdleWakeFrontsASingleAPIServer(t *testing.T) {
	cfg, plain, specs := renderIdleWake(t, SingleReplica, 40000)
	byName := map[string]runtime.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	proxy, ok := byName[KubeAPIServerProxy]
	if !ok {
		t.Fatalf("no endpoint proxy with IdleWake: %v", names(specs))
	}
	if proxy.Ports[PublishedPort] != cfg.Ports[EndpointPort] || len(proxy.Publish) != 1 {
		t.Errorf("the proxy does not publish the endpoint port: ports %v publish %v", proxy.Ports, proxy.Publish)
	}
	for _, want := range []string{"--wake-on-request", "--internal-listen=127.0.0.1:"} {
		if !slices.ContainsFunc(proxy.Args, func(a string) bool { return strings.HasPrefix(a, want) }) {
			t.Errorf("proxy args lack %s: %v", want, proxy.Args)
		}
	}
	if proxy.Readiness.Path != "/healthz" {
		t.Errorf("proxy readiness %s: it must stay ready while the control plane sleeps", proxy.Readiness.Path)
	}
	api := byName[KubeAPIServer]
	if len(api.Publish) != 0 || api.Ports[PublishedPort] == cfg.Ports[EndpointPort] || !slices.Contains(api.Args, "--bind-address=127.0.0.1") {
		t.Errorf("the API server still takes the endpoint: ports %v publish %v", api.Ports, api.Publish)
	}
	internal := cfg.Ports[ProxyInternalPort]
	for _, name := range []string{KubeControllerManager, KubeScheduler} {
		kc := ""
		for _, f := range byName[name].Files {
			if f.Path == "kubeconfig" {
				kc = string(f.Content)
			}
		}
		if !strings.Contains(kc, "https://127.0.0.1:"+strconv.Itoa(internal)) {
			t.Errorf("%s does not reach the API at the proxy's internal port %d", name, internal)
		}
	}
	if slices.Contains(names(plain), KubeAPIServerProxy) {
		t.Errorf("a single-replica control plane without IdleWake got a proxy: %v", names(plain))
	}
}

// TestIdleWakeHighlyAvailable: a replicated control plane keeps its proxy
// and API server ports; IdleWake adds the hold and the internal port, and
// its controllers wait for an API server, not for the (always healthy)
// proxy.
func TestIdleWakeHighlyAvailable(t *testing.T) {
	_, plain, specs := renderIdleWake(t, HighlyAvailable, 41000)
	if !slices.Equal(names(plain), names(specs)) {
		t.Errorf("instances %v with IdleWake, want those without it: %v", names(specs), names(plain))
	}
	for i, s := range specs {
		switch s.Component {
		case KubeAPIServerProxy:
			if !slices.Contains(s.Args, "--wake-on-request") {
				t.Errorf("proxy args lack --wake-on-request: %v", s.Args)
			}
		case KubeAPIServer:
			if s.Hash() != plain[i].Hash() {
				t.Errorf("%s changed with IdleWake", s.Name)
			}
		case KubeControllerManager, KubeScheduler:
			if !slices.Equal(s.After, []string{"kube-apiserver-0"}) {
				t.Errorf("%s waits for %v, want kube-apiserver-0", s.Name, s.After)
			}
		}
	}
}
