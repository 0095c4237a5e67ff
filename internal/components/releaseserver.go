package components

import (
	"net"
	"strconv"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/releaseserver"
	"hypershift.dev/internal/runtime"
)

// ReleaseServer serves the cluster's Kubernetes releases to its nodes
// (internal/releaseserver); rendered for control planes of platform None
// only, whose joined nodes fetch their kubelet from it.
const ReleaseServer = releaseserver.Name

// ReleaseServerPort is the published port of the release server; a
// control plane allocates it only when it runs one (ReleaseServerPortNames).
const ReleaseServerPort = "release-server"

// PublishedReleaseServerPort is its name in the release server's Spec.
const PublishedReleaseServerPort = "https"

// ReleaseServerPortNames are the ports a control plane that runs the
// release server needs besides PortNames.
func ReleaseServerPortNames() []string { return []string{ReleaseServerPort} }

// releaseServer: the control plane serves releases to its nodes (one host
// only: in pods the image would have to carry every release; not done).
func (cfg Config) releaseServer() bool { return cfg.ReleaseServer && !cfg.Management && !cfg.pods() }

// renderReleaseServer is the release server at the endpoint host. It
// serves with the API server's certificate (issued by the root CA the
// nodes pin, its SANs the endpoint host's names), verifies client
// certificates with the API server's client CA, and reviews bearer tokens
// with the API server itself.
func renderReleaseServer(cfg Config) runtime.Spec {
	port := cfg.Ports[ReleaseServerPort]
	dir := cfg.dir(ReleaseServer, ReleaseServer)
	flags := releaseserver.Config{
		Listen:          net.JoinHostPort(cfg.endpointHost(), strconv.Itoa(port)),
		CertFile:        dir("tls.crt"),
		KeyFile:         dir("tls.key"),
		ClientCAFile:    dir("client-ca.crt"),
		APIServer:       "https://" + net.JoinHostPort(cfg.endpointHost(), strconv.Itoa(cfg.Ports[EndpointPort])),
		APIServerCAFile: dir("ca.crt"),
		ReleasesDir:     cfg.ReleasesDir,
	}
	p := cfg.PKI
	return runtime.Spec{
		Name:      ReleaseServer,
		Component: ReleaseServer,
		Args:      flags.Args(),
		Files: []runtime.File{
			{Path: "tls.crt", Content: p.KubeAPIServer.CertPEM},
			{Path: "tls.key", Content: p.KubeAPIServer.KeyPEM, Secret: true},
			{Path: "client-ca.crt", Content: p.Bundle(pki.ClientCAName)},
			{Path: "ca.crt", Content: p.Bundle(pki.RootCAName)},
		},
		Ports:   map[string]int{PublishedReleaseServerPort: port},
		Publish: cfg.publish(cfg.ReleaseServerPublish, ReleaseServerPort, PublishedReleaseServerPort),
		// Any answer (a 401 to the unauthenticated probe) means it serves.
		Readiness: runtime.Probe{Scheme: "https", Host: cfg.endpointHost(), Port: port, Path: "/healthz"},
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 5, MemoryBytes: 16 << 20},
	}
}
