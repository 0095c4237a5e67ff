package components

import (
	"fmt"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/yaml"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// KonnectivityServer is the instance (and compiled-in component) that ends
// the Konnectivity tunnel on the control-plane side: the hosted cluster's
// agents dial in to it, and the API servers reach nodes, pods and services
// through it (docs/architecture.md, "Konnectivity").
const KonnectivityServer = "konnectivity-server"

// Port names of the Konnectivity server.
const (
	// KonnectivityPort is the agent-facing port, published on the endpoint
	// host like the API endpoint.
	KonnectivityPort = "konnectivity"
	// konnectivityHealthPort and konnectivityAdminPort stay on loopback.
	konnectivityHealthPort = "konnectivity-health"
	konnectivityAdminPort  = "konnectivity-admin"
)

// maxSocketPath is the longest unix socket path used: the kernel's limit is
// 107 bytes (sun_path), and some tools count less.
const maxSocketPath = 99

// konnectivitySocket is where the server listens for the API servers: in
// its instance directory, or right in the control plane's directory when
// the data dir is so deep that the first path is too long for a socket.
func (cfg Config) konnectivitySocket() (string, error) {
	for _, p := range []string{
		path(cfg.Layout.Dir, KonnectivityServer, "konnectivity.sock"),
		filepath.Join(cfg.Layout.Dir, "konnectivity.sock"),
	} {
		if len(p) <= maxSocketPath {
			return p, nil
		}
	}
	p := filepath.Join(cfg.Layout.Dir, "konnectivity.sock")
	return "", fmt.Errorf("%s: unix socket path %s is %d bytes, the limit is %d: use a shorter data dir (--data-dir)",
		KonnectivityServer, p, len(p), maxSocketPath)
}

// renderKonnectivityServers renders the tunnel servers of a control plane.
// On one host there is one: every API server, also of a replicated control
// plane, uses it over its unix socket, so an agent's one connection serves
// all of them. In pods there is one beside each API server (a unix socket
// does not cross pods), and agents connect to each through the Service.
func renderKonnectivityServers(cfg Config) ([]runtime.Spec, error) {
	if !cfg.pods() {
		spec, err := renderKonnectivityServer(cfg, KonnectivityServer, 1)
		return []runtime.Spec{spec}, err
	}
	n := cfg.replicas().KubeAPIServer
	specs := make([]runtime.Spec, 0, n)
	for i := range n {
		spec, err := renderKonnectivityServer(cfg, instanceName(KonnectivityServer, i, n), n)
		if err != nil {
			return nil, err
		}
		spec.Beside = KubeAPIServer
		specs = append(specs, spec)
	}
	return specs, nil
}

// PublishedKonnectivityPort is the port name, in a Konnectivity server's
// Spec, that is published as KonnectivityPort.
const PublishedKonnectivityPort = "agent"

func renderKonnectivityServer(cfg Config, name string, servers int) (runtime.Spec, error) {
	socket, err := cfg.konnectivitySocket()
	if err != nil {
		return runtime.Spec{}, err
	}
	dir := cfg.dir(KonnectivityServer, name)
	agent, health, admin := cfg.Ports[KonnectivityPort], cfg.Ports[konnectivityHealthPort], cfg.Ports[konnectivityAdminPort]
	agentBind := cfg.endpointHost()
	if cfg.pods() {
		agentBind = cfg.listen()
	}
	p := cfg.PKI
	kc, err := localKubeconfig(cfg, KonnectivityServer, name)
	if err != nil {
		return runtime.Spec{}, err
	}
	return runtime.Spec{
		Name:      name,
		Component: KonnectivityServer,
		Args: []string{
			"--mode=grpc",
			"--uds-name=" + socket,
			"--delete-existing-uds-file=true",
			"--server-port=0",
			"--agent-bind-address=" + agentBind,
			"--agent-port=" + strconv.Itoa(agent),
			"--health-bind-address=" + cfg.listen(),
			"--health-port=" + strconv.Itoa(health),
			"--admin-bind-address=" + loopback,
			"--admin-port=" + strconv.Itoa(admin),
			// Agents authenticate with a client certificate of this
			// cluster's Konnectivity CA.
			"--cluster-cert=" + dir("server.crt"),
			"--cluster-key=" + dir("server.key"),
			"--cluster-ca-cert=" + dir("ca.crt"),
			"--server-count=" + strconv.Itoa(servers),
			"--proxy-strategies=destHost,default",
			// Each agent also proves which node it runs on, with a token
			// bound to its pod: the server reviews it at the hosted API
			// server and accepts only the node's recorded addresses as
			// the agent's identifiers (docs/security.md).
			"--kubeconfig=" + dir("kubeconfig"),
			"--agent-namespace=" + pki.KonnectivityAgentNamespace,
			"--agent-service-account=" + pki.KonnectivityAgentServiceAccount,
			"--authentication-audience=" + pki.KonnectivityAudience,
		},
		Files: append([]runtime.File{
			{Path: "ca.crt", Content: p.Bundle(pki.KonnectivityCAName)},
			{Path: "server.crt", Content: p.KonnectivityServer.CertPEM},
			{Path: "server.key", Content: p.KonnectivityServer.KeyPEM, Secret: true},
		}, kubeconfigFiles(kc, p.KonnectivityServerClient)...),
		Ports: map[string]int{PublishedKonnectivityPort: agent, "health": health, "admin": admin},
		// /healthz, not /readyz: the server is ready for the API servers
		// before any agent connects (a cluster without nodes has none).
		Readiness: runtime.Probe{Scheme: "http", Port: health, Path: "/healthz"},
		Publish:   cfg.publish(cfg.Konnectivity, KonnectivityPort, PublishedKonnectivityPort),
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 10, MemoryBytes: 32 << 20},
	}, nil
}

// egressSelectorFile is an API server's egress selector configuration: its
// traffic to the cluster (kubelets, pods, services, webhooks) goes through
// the Konnectivity server's socket.
func (cfg Config) egressSelectorFile() (runtime.File, error) {
	socket, err := cfg.konnectivitySocket()
	if err != nil {
		return runtime.File{}, err
	}
	content, err := yaml.Marshal(map[string]any{
		"apiVersion": "apiserver.k8s.io/v1beta1",
		"kind":       "EgressSelectorConfiguration",
		"egressSelections": []any{map[string]any{
			"name": "cluster",
			"connection": map[string]any{
				"proxyProtocol": "GRPC",
				"transport":     map[string]any{"uds": map[string]any{"udsName": socket}},
			},
		}},
	})
	if err != nil {
		return runtime.File{}, fmt.Errorf("egress selector configuration: %w", err)
	}
	return runtime.File{Path: "egress-selector.yaml", Content: content}, nil
}
