package components

import (
	"fmt"

	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// Component names: the compiled-in Kubernetes components, and hypershift's
// own endpoint proxy.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	// KubeAPIServerProxy is the stable endpoint in front of replicated API
	// servers (internal/endpointproxy).
	KubeAPIServerProxy = endpointproxy.Name
)

// Replicas is how many instances of each component a control plane runs.
type Replicas struct {
	Etcd, KubeAPIServer, Controllers int
}

// SingleReplica is the light default: one of everything.
var SingleReplica = Replicas{Etcd: 1, KubeAPIServer: 1, Controllers: 1}

// HighlyAvailable is three etcd members, two API servers behind a proxy and
// two leader-elected controller managers and schedulers.
var HighlyAvailable = Replicas{Etcd: 3, KubeAPIServer: 2, Controllers: 2}

// Config is everything a control plane's components are rendered from.
type Config struct {
	// Name identifies the control plane (its namespace, NS-NAME).
	Name string
	// Layout is what the runtime offers the instances: their directory
	// and how they reach each other.
	Layout runtime.Layout
	// PKI holds the control plane's certificates and keys.
	PKI *pki.ControlPlane
	// Replicas of each component; zero means SingleReplica.
	Replicas Replicas
	// Ports are the ports the instances listen on, by PortNames.
	Ports map[string]int
	// BindAddress is the IP address the published API endpoint listens on
	// (the API server of a single-replica control plane, the proxy of a
	// replicated one): the address clients are given. Empty means
	// loopback. Nothing listens on every interface.
	BindAddress string
	// ServiceCIDR and ClusterCIDR are the service and pod ranges.
	ServiceCIDR string
	ClusterCIDR string
	// NodeCIDRMaskSize is the prefix length of each node's pod range.
	NodeCIDRMaskSize int
	// EncryptionKey (32 bytes) encrypts Secrets at rest in etcd.
	EncryptionKey []byte
	// Management renders a management plane: no scheduler, no
	// Konnectivity server, and only the controllers a management plane
	// needs.
	Management bool
	// SingleProcess runs the API server, controller manager and scheduler
	// of a single-replica control plane as one process (KubeControlPlane).
	SingleProcess bool
}

// goGC is the Go garbage collector's target for a hosted control plane's
// etcd and API server: a live heap of H is collected at 1.5 H instead of
// 2 H: about 45 MiB less per idle control plane for ~0.2 more CPU-seconds
// of start-up (docs/performance.md, "Levers").
const goGC = "GOGC=50"

// hostedEnv is the environment of a hosted control plane's etcd and API
// servers; the management plane keeps the Go defaults.
func (cfg Config) hostedEnv() []string {
	if cfg.Management {
		return nil
	}
	return []string{goGC}
}

func (cfg Config) replicas() Replicas {
	if cfg.Replicas == (Replicas{}) {
		return SingleReplica
	}
	return cfg.Replicas
}

// Port names.
const (
	// EndpointPort is the published API port: the API server's own in a
	// single-replica control plane, the proxy's otherwise.
	EndpointPort = "endpoint"
	// proxyHealthPort serves the endpoint proxy's own /readyz.
	proxyHealthPort = "kube-apiserver-proxy-health"
)

// PortNames lists the ports a control plane of r needs. The runtime keeps
// the ports it gave out, and gives names new to a control plane (the
// Konnectivity server's, to a cluster made before it) ports of their own.
func PortNames(r Replicas) []string {
	names := []string{EndpointPort}
	for i := range r.Etcd {
		names = append(names, etcdPort(i, "client"), etcdPort(i, "peer"), etcdPort(i, "metrics"))
	}
	if r.KubeAPIServer > 1 {
		for i := range r.KubeAPIServer {
			names = append(names, instanceName(KubeAPIServer, i, r.KubeAPIServer))
		}
		names = append(names, proxyHealthPort)
	}
	for i := range r.Controllers {
		names = append(names,
			instanceName(KubeControllerManager, i, r.Controllers),
			instanceName(KubeScheduler, i, r.Controllers))
	}
	return append(names, KonnectivityPort, konnectivityHealthPort, konnectivityAdminPort)
}

func etcdPort(i int, kind string) string { return fmt.Sprintf("etcd-%d-%s", i, kind) }

// instanceName names instance i of n: the component itself when it runs
// alone, NAME-i otherwise. etcd members are always etcd-i (their member
// names are part of the cluster's identity).
func instanceName(component string, i, n int) string {
	if n == 1 && component != Etcd {
		return component
	}
	return fmt.Sprintf("%s-%d", component, i)
}

// endpointHost is the address the published API endpoint listens on and
// the control plane's own components reach it at.
func (cfg Config) endpointHost() string {
	if cfg.BindAddress == "" {
		return loopback
	}
	return cfg.BindAddress
}

// loopback is where every unpublished listener binds.
const loopback = "127.0.0.1"

// apiServerBindAddress is where API server i listens: on the endpoint when
// it is the endpoint, on loopback behind the proxy otherwise.
func (cfg Config) apiServerBindAddress() string {
	if cfg.replicas().KubeAPIServer == 1 {
		return cfg.endpointHost()
	}
	return loopback
}

// apiServerPort is the port of API server i.
func (cfg Config) apiServerPort(i int) int {
	n := cfg.replicas().KubeAPIServer
	if n == 1 {
		return cfg.Ports[EndpointPort]
	}
	return cfg.Ports[instanceName(KubeAPIServer, i, n)]
}

// Render returns the control plane's instances in start order.
func Render(cfg Config) ([]runtime.Spec, error) {
	r := cfg.replicas()
	var specs []runtime.Spec
	for i := range r.Etcd {
		specs = append(specs, renderEtcd(cfg, i))
	}
	if !cfg.Management {
		konnectivity, err := renderKonnectivityServer(cfg)
		if err != nil {
			return nil, err
		}
		specs = append(specs, konnectivity)
	}
	for i := range r.KubeAPIServer {
		spec, err := renderKubeAPIServer(cfg, i)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	if r.KubeAPIServer > 1 {
		specs = append(specs, renderKubeAPIServerProxy(cfg))
	}
	for i := range r.Controllers {
		kcm, err := renderKubeControllerManager(cfg, i)
		if err != nil {
			return nil, err
		}
		specs = append(specs, kcm)
		if cfg.Management {
			continue
		}
		scheduler, err := renderKubeScheduler(cfg, i)
		if err != nil {
			return nil, err
		}
		specs = append(specs, scheduler)
	}
	if cfg.SingleProcess && r == SingleReplica && !cfg.Management {
		specs = singleProcess(cfg, specs)
	}
	return specs, nil
}
