package components

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
	"hypershift.dev/internal/workloadidentity"
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
	// HeldTrust names instances that keep the CA they hold in memory
	// after a rotation dropped it (PKI.Dropped), so that they are not
	// restarted yet: a highly available control plane restarts them one
	// at a time (readOnceTrust).
	HeldTrust map[string]bool
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
	// WithoutScheduler leaves the scheduler out: a cluster without nodes has
	// nothing to schedule (the controller starts it when the first node
	// registers). Ignored for a single-process control plane, whose one
	// process runs the scheduler too.
	WithoutScheduler bool
	// APIServer and Konnectivity say how the API endpoint and the
	// Konnectivity server's agent port are published (Type, Address,
	// NodePort; the renderer fills in Port). A zero Type is HostPort at
	// the endpoint host.
	APIServer, Konnectivity runtime.Publish
	// EtcdStorageClass and EtcdStorageSize are the cluster's own choice for
	// its etcd members' volumes (spec.etcd.managed.storage), for runtimes
	// that keep Data on volumes; empty means the runtime's default.
	EtcdStorageClass, EtcdStorageSize string
	// KubernetesVersion is the release the API server, controller manager
	// and scheduler run (internal/release); "" or the compiled-in version
	// renders specs without a Version. etcd and hypershift's own
	// components always come from the hypershift binary.
	KubernetesVersion string
	// IdleWake puts the endpoint proxy in front of the API server(s) even
	// of a single-replica control plane, holding client connections while
	// the control plane sleeps and counting client activity
	// (spec.hibernation.idleAfter); the control plane's own components
	// reach it on an internal port that is not counted. One host only.
	IdleWake bool
	// ReleaseServer runs the release server (platform None: joined nodes
	// fetch their kubelet from it), serving the releases of ReleasesDir
	// beside the compiled-in one, published as ReleaseServerPublish says
	// (a zero Type is HostPort at the endpoint host).
	ReleaseServer        bool
	ReleasesDir          string
	ReleaseServerPublish runtime.Publish
	// KubeletCertificateValidity is how long the controller manager signs
	// the certificates kubelets ask for (they renew them themselves at 70–90
	// % of their life); zero or a year keeps upstream's default, a year, and
	// renders no flag.
	KubeletCertificateValidity time.Duration
	// ServiceAccountIssuer is the issuer of service-account tokens
	// (spec.issuerURL); empty is DefaultIssuer.
	ServiceAccountIssuer string
	// WorkloadIdentityWebhook, when set, runs the workload-identity
	// webhook with these settings (spec.workloadIdentityWebhook), on
	// the port WorkloadIdentityWebhookPortNames names.
	WorkloadIdentityWebhook *workloadidentity.Config
}

// MaxTokenExpiration is the longest a service-account token of a hosted
// cluster lives (the API server's --service-account-max-token-expiration;
// longer requests get this).
const MaxTokenExpiration = 24 * time.Hour

// DefaultIssuer is the service-account issuer of a cluster without
// spec.issuerURL: the API server's in-cluster name.
const DefaultIssuer = "https://kubernetes.default.svc"

// issuer is the cluster's service-account issuer.
func (cfg Config) issuer() string {
	if cfg.ServiceAccountIssuer != "" {
		return cfg.ServiceAccountIssuer
	}
	return DefaultIssuer
}

// version is the Spec.Version of the Kubernetes components: "" for the
// compiled-in release.
func (cfg Config) version() string {
	if cfg.KubernetesVersion == version.KubernetesVersion {
		return ""
	}
	return cfg.KubernetesVersion
}

// idleWake: the proxy fronts the API servers for idle hibernation.
func (cfg Config) idleWake() bool { return cfg.IdleWake && !cfg.pods() && !cfg.Management }

// proxied: the published endpoint is the endpoint proxy.
func (cfg Config) proxied() bool {
	return (cfg.replicas().KubeAPIServer > 1 || cfg.idleWake()) && !cfg.pods()
}

// pods: each instance runs in a network namespace and filesystem of its
// own (Layout.Pods).
// singleProcess: the API server, controller manager and scheduler run as
// one process (a command of the hypershift binary only: another release
// runs its components as separate processes).
func (cfg Config) singleProcess() bool {
	return cfg.SingleProcess && cfg.replicas() == SingleReplica && !cfg.Management && cfg.version() == ""
}

func (cfg Config) pods() bool { return cfg.Layout.Pods && !cfg.Management }

// dir returns a function giving the path of a file of an instance: under
// Dir/<instance> on one host; under Dir/<component> in pods, whose
// filesystems are their own, so that replicas have equal specs.
func (cfg Config) dir(component, instance string) func(string) string {
	if cfg.pods() {
		instance = component
	}
	return func(f string) string { return path(cfg.Layout.Dir, instance, f) }
}

// self is how an instance writes its own name in its arguments.
func (cfg Config) self(instance string) string {
	if cfg.pods() && cfg.Layout.Self != "" {
		return cfg.Layout.Self
	}
	return instance
}

// listen is where listeners that other instances use bind: loopback on one
// host, every address of the pod's own network namespace in pods.
func (cfg Config) listen() string {
	if cfg.pods() {
		return "0.0.0.0"
	}
	return loopback
}

// probeHost is the address a readiness probe of a listener bound to bind
// uses: bind itself on one host; in a pod empty, the runtime's default
// (the pod's IP).
func (cfg Config) probeHost(bind string) string {
	if cfg.pods() {
		return ""
	}
	return bind
}

// publish completes how a port is published: name is what the runtime is
// asked for, port the spec's own name of it.
func (cfg Config) publish(p runtime.Publish, name, port string) []runtime.Publish {
	if p.Type == "" {
		p.Type = runtime.HostPort
	}
	if p.Type == runtime.HostPort && p.Address == "" {
		p.Address = cfg.endpointHost()
	}
	p.Name, p.Port = name, port
	return []runtime.Publish{p}
}

// goGC is the Go garbage collector's target for a hosted control plane's
// etcd and API server: a live heap of H is collected at 1.5 H instead of
// 2 H: about 45 MiB less per idle control plane for ~0.2 more CPU-seconds
// of start-up (docs/performance.md, "Levers").
const goGC = "GOGC=50"

// goMaxProcs runs Go code on one thread at a time: an idle process then
// has no second scheduler thread to wake, spin and park on each timer
// (docs/performance.md, "One scheduler thread for the lighter hosted
// processes").
const goMaxProcs = "GOMAXPROCS=1"

// hostedEnv is the environment of a hosted control plane's processes
// other than the API server: goMaxProcs and extra. The management plane
// keeps the Go defaults.
func (cfg Config) hostedEnv(extra ...string) []string {
	if cfg.Management {
		return nil
	}
	return append([]string{goMaxProcs}, extra...)
}

// hostedGCEnv is the hosted API server's environment: goGC, on every
// core.
func (cfg Config) hostedGCEnv() []string {
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
	// ProxyHealthPort names it for the operator, which reads the proxy's
	// activity there.
	ProxyHealthPort = proxyHealthPort
	// proxyInternalPort is the proxy's endpoint for the control plane's
	// own clients (IdleWake); ProxyInternalPort names it for the operator,
	// whose connection to the hosted cluster is not a client's activity
	// either.
	proxyInternalPort = "kube-apiserver-proxy-internal"
	ProxyInternalPort = proxyInternalPort
)

// IdleWakePortNames are the ports a control plane of r needs besides
// PortNames when IdleWake is on: the proxy's, and the API server's own
// when it is the only one (otherwise it listens on the endpoint).
func IdleWakePortNames(r Replicas) []string {
	if r.KubeAPIServer > 1 {
		return []string{proxyInternalPort}
	}
	return []string{KubeAPIServer, proxyHealthPort, proxyInternalPort}
}

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

// EtcdClientPort names the client port of etcd member i (backups reach
// etcd there).
func EtcdClientPort(i int) string { return etcdPort(i, "client") }

// EtcdClientURLs are the client URLs of the members of r's etcd for one
// outside the members (the operator): loopback on one host, each member's
// name in pods, at the ports allocated by PortNames.
func EtcdClientURLs(r Replicas, layout runtime.Layout, ports map[string]int) []string {
	urls := make([]string, r.Etcd)
	for i := range urls {
		host := loopback
		if layout.Pods {
			host = layout.Host(Etcd, fmt.Sprintf("%s-%d", Etcd, i))
		}
		urls[i] = "https://" + net.JoinHostPort(host, strconv.Itoa(ports[EtcdClientPort(i)]))
	}
	return urls
}

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
// it is the endpoint, on loopback behind the proxy otherwise; in a pod on
// every address of its own.
func (cfg Config) apiServerBindAddress() string {
	if cfg.pods() {
		return cfg.listen()
	}
	if cfg.replicas().KubeAPIServer == 1 && !cfg.idleWake() {
		return cfg.endpointHost()
	}
	return loopback
}

// apiServerPort is the port of API server i.
func (cfg Config) apiServerPort(i int) int {
	n := cfg.replicas().KubeAPIServer
	if n == 1 && !cfg.idleWake() {
		return cfg.Ports[EndpointPort]
	}
	return cfg.Ports[instanceName(KubeAPIServer, i, n)]
}

// Render returns the control plane's instances in start order.
func Render(cfg Config) ([]runtime.Spec, error) {
	if v := cfg.version(); v != "" && !versionPattern.MatchString(v) {
		return nil, fmt.Errorf("KubernetesVersion %q is not a Kubernetes version: use vMAJOR.MINOR.PATCH, such as %s", v, version.KubernetesVersion)
	}
	r := cfg.replicas()
	var specs []runtime.Spec
	for i := range r.Etcd {
		specs = append(specs, renderEtcd(cfg, i))
	}
	if !cfg.Management {
		konnectivity, err := renderKonnectivityServers(cfg)
		if err != nil {
			return nil, err
		}
		specs = append(specs, konnectivity...)
	}
	for i := range r.KubeAPIServer {
		spec, err := renderKubeAPIServer(cfg, i)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	if cfg.proxied() {
		// In pods, the runtime's Service balances the API servers.
		specs = append(specs, renderKubeAPIServerProxy(cfg))
	}
	if cfg.releaseServer() {
		specs = append(specs, renderReleaseServer(cfg))
	}
	if cfg.workloadIdentityWebhook() {
		spec, err := renderWorkloadIdentityWebhook(cfg)
		if err != nil {
			return nil, err
		}
		specs = append(specs, spec)
	}
	for i := range r.Controllers {
		kcm, err := renderKubeControllerManager(cfg, i)
		if err != nil {
			return nil, err
		}
		specs = append(specs, kcm)
		if cfg.Management || (cfg.WithoutScheduler && !cfg.singleProcess()) {
			continue
		}
		scheduler, err := renderKubeScheduler(cfg, i)
		if err != nil {
			return nil, err
		}
		specs = append(specs, scheduler)
	}
	// The combined process is a command of the hypershift binary only:
	// another release runs its components as separate processes.
	if cfg.singleProcess() {
		if cfg.pods() {
			return nil, errors.New("a single-process control plane runs on one host only, not in pods")
		}
		specs = singleProcess(cfg, specs)
	}
	return specs, nil
}

// PortRequest is want for Runtime.Ports: each name with its upstream
// default (WellKnownPort).
func PortRequest(names []string) map[string]int {
	want := make(map[string]int, len(names))
	for _, n := range names {
		want[n] = WellKnownPort(n)
	}
	return want
}

// WellKnownPort is the upstream default port of each port name of
// PortNames, for runtimes whose instances each have a network namespace of
// their own and so need no allocation; 0 for names without one.
func WellKnownPort(name string) int {
	switch name {
	case EndpointPort:
		return 6443
	case KonnectivityPort:
		return 8091
	case konnectivityHealthPort:
		return 8092
	case konnectivityAdminPort:
		return 8093
	case proxyHealthPort:
		return 8444
	case proxyInternalPort:
		return 8445
	}
	for _, p := range []struct {
		prefix string
		port   int
	}{
		{KubeAPIServer, 6443},
		{KubeControllerManager, 10257},
		{KubeScheduler, 10259},
	} {
		if name == p.prefix || strings.HasPrefix(name, p.prefix+"-") {
			return p.port
		}
	}
	if strings.HasPrefix(name, Etcd+"-") {
		switch {
		case strings.HasSuffix(name, "-client"):
			return 2379
		case strings.HasSuffix(name, "-peer"):
			return 2380
		case strings.HasSuffix(name, "-metrics"):
			return 2381
		}
	}
	return 0
}

// versionPattern is the form of a Kubernetes release version.
var versionPattern = regexp.MustCompile(`^v1\.[0-9]+\.[0-9]+$`)
