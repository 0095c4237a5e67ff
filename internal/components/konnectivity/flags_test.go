package konnectivity

import (
	"os/exec"
	"strings"
	"testing"

	serveroptions "sigs.k8s.io/apiserver-network-proxy/cmd/server/app/options"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// TestRenderedServerFlagsAreUpstreams: the flags the control plane renders
// are the upstream server's, with the values meant.
func TestRenderedServerFlagsAreUpstreams(t *testing.T) {
	ports := map[string]int{}
	for i, name := range components.PortNames(components.SingleReplica) {
		ports[name] = 20001 + i
	}
	specs, err := components.Render(components.Config{
		Name: "clusters-demo", Layout: runtime.Layout{Dir: "/var/lib/hypershift/clusters/clusters-demo"}, PKI: &pki.ControlPlane{},
		Ports: ports, EncryptionKey: make([]byte, 32), BindAddress: "192.0.2.10",
	})
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, s := range specs {
		if s.Component == Server {
			args = s.Args
		}
	}
	o := serveroptions.NewProxyRunOptions()
	if help, err := parse(Server, o.Flags(), args); help || err != nil {
		t.Fatalf("upstream flags refuse the rendered %v: %v", args, err)
	}
	if o.Mode != "grpc" || o.ServerPort != 0 || o.UdsName == "" || o.ServerCount != 1 ||
		o.AgentBindAddress != "192.0.2.10" || o.AgentPort != ports[components.KonnectivityPort] ||
		o.HealthBindAddress != "127.0.0.1" || o.AdminBindAddress != "127.0.0.1" ||
		o.ClusterCaCert == "" || o.ProxyStrategies != "destHost,default" ||
		o.KubeconfigPath == "" || o.AgentNamespace != "kube-system" || o.AgentServiceAccount != "konnectivity-agent" ||
		o.AuthenticationAudience != pki.KonnectivityAudience {
		t.Errorf("rendered server options %+v", o)
	}
}

// TestHelpThroughTheBinary: `hypershift component konnectivity-… --help`
// prints the upstream flags and succeeds; the binary's other flags do not
// clash with them.
func TestHelpThroughTheBinary(t *testing.T) {
	for name, flag := range map[string]string{Server: "--uds-name", Agent: "--proxy-server-host"} {
		out, err := exec.CommandContext(t.Context(), testenv.Binary(t), "component", name, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), flag) || !strings.Contains(string(out), "--kubeconfig") {
			t.Errorf("%s --help: %v\n%s", name, err, out)
		}
		out, err = exec.CommandContext(t.Context(), testenv.Binary(t), "component", name, "--no-such-flag").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "unknown flag: --no-such-flag") {
			t.Errorf("%s with an unknown flag: %v\n%s", name, err, out)
		}
	}
}

func TestRegistryIsValid(t *testing.T) {
	if err := Components().Validate(); err != nil {
		t.Fatal(err)
	}
}
