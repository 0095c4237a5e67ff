package components

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// Controllers a management plane runs: it hosts no workloads, so it needs
// only namespace cleanup, owner-reference garbage collection and the
// aggregation of the default roles (admin, edit, view), which users grant
// in their namespaces (an addon's ServiceAccount among them).
const managementControllers = "garbage-collector-controller,namespace-controller,clusterrole-aggregation-controller"

// endpointInstance is the instance behind the published API port.
// defaultSigningDuration is the controller manager's own
// --cluster-signing-duration default.
const defaultSigningDuration = 365 * 24 * time.Hour

func endpointInstance(cfg Config) string {
	if cfg.proxied() {
		return KubeAPIServerProxy
	}
	return KubeAPIServer
}

// controllersAfter is what the controllers wait for: the endpoint, or with
// IdleWake the API server itself (the proxy is healthy without one).
func controllersAfter(cfg Config) string {
	if cfg.idleWake() {
		return instanceName(KubeAPIServer, 0, cfg.replicas().KubeAPIServer)
	}
	return endpointInstance(cfg)
}

// controllerArgs are the flags the controller manager and the scheduler
// share: their kubeconfig for every API call, a loopback serving port, and
// leader election when controllers are replicated.
func controllerArgs(cfg Config, component, name string) []string {
	dir := cfg.dir(component, name)
	kubeconfig := dir("kubeconfig")
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=" + cfg.listen(),
		fmt.Sprintf("--secure-port=%d", cfg.Ports[name]),
		"--cert-dir=" + dir("certs"),
		// In pods also for one replica: a rollout runs the old and the new
		// pod side by side, and two controller managers must not both act.
		fmt.Sprintf("--leader-elect=%t", cfg.pods() || cfg.replicas().Controllers > 1),
		"--profiling=false",
	}
}

func renderKubeControllerManager(cfg Config, i int) (runtime.Spec, error) {
	name := instanceName(KubeControllerManager, i, cfg.replicas().Controllers)
	p := cfg.PKI
	dir := cfg.dir(KubeControllerManager, name)
	kc, err := localKubeconfig(cfg, KubeControllerManager, name)
	if err != nil {
		return runtime.Spec{}, err
	}
	args := append(controllerArgs(cfg, KubeControllerManager, name),
		"--root-ca-file="+dir("root-ca.crt"),
		"--service-account-private-key-file="+dir("service-account.key"),
		"--use-service-account-credentials=true",
		"--service-cluster-ip-range="+cfg.ServiceCIDR,
	)
	if cfg.Management {
		args = append(args, "--controllers="+managementControllers)
	} else {
		args = append(args,
			"--controllers=*,bootstrapsigner,tokencleaner",
			"--cluster-signing-kube-apiserver-client-cert-file="+dir("client-ca.crt"),
			"--cluster-signing-kube-apiserver-client-key-file="+dir("client-ca.key"),
			"--cluster-signing-kubelet-client-cert-file="+dir("client-ca.crt"),
			"--cluster-signing-kubelet-client-key-file="+dir("client-ca.key"),
			"--cluster-signing-legacy-unknown-cert-file="+dir("client-ca.crt"),
			"--cluster-signing-legacy-unknown-key-file="+dir("client-ca.key"),
			"--cluster-signing-kubelet-serving-cert-file="+dir("kubelet-ca.crt"),
			"--cluster-signing-kubelet-serving-key-file="+dir("kubelet-ca.key"),
			"--allocate-node-cidrs=true",
			// The default 20 requests/s paces node joins and pod churn.
			"--kube-api-qps=100",
			"--kube-api-burst=200",
			"--cluster-cidr="+cfg.ClusterCIDR,
			fmt.Sprintf("--node-cidr-mask-size=%d", cfg.NodeCIDRMaskSize),
		)
		if d := cfg.KubeletCertificateValidity; d != 0 && d != defaultSigningDuration {
			args = append(args, "--cluster-signing-duration="+d.String())
		}
	}
	files := append(kubeconfigFiles(kc, p.KubeControllerManager),
		runtime.File{Path: "root-ca.crt", Content: p.Bundle(pki.RootCAName)},
		runtime.File{Path: "service-account.key", Content: p.ServiceAccountKey.KeyPEM, Secret: true},
	)
	if !cfg.Management {
		files = append(files,
			runtime.File{Path: "client-ca.crt", Content: p.ClientCA.CertPEM},
			runtime.File{Path: "client-ca.key", Content: p.ClientCA.KeyPEM, Secret: true},
			runtime.File{Path: "kubelet-ca.crt", Content: p.KubeletCA.CertPEM},
			runtime.File{Path: "kubelet-ca.key", Content: p.KubeletCA.KeyPEM, Secret: true},
		)
	}
	return runtime.Spec{
		Name:      name,
		Component: KubeControllerManager,
		Version:   cfg.version(),
		After:     []string{controllersAfter(cfg)},
		Args:      args,
		Files:     files,
		Ports:     map[string]int{"https": cfg.Ports[name]},
		Readiness: runtime.Probe{Scheme: "https", Port: cfg.Ports[name], Path: "/healthz"},
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 50, MemoryBytes: 128 << 20},
	}, nil
}

func renderKubeScheduler(cfg Config, i int) (runtime.Spec, error) {
	name := instanceName(KubeScheduler, i, cfg.replicas().Controllers)
	kc, err := localKubeconfig(cfg, KubeScheduler, name)
	if err != nil {
		return runtime.Spec{}, err
	}
	return runtime.Spec{
		Name:      name,
		Component: KubeScheduler,
		Version:   cfg.version(),
		After:     []string{controllersAfter(cfg)},
		Args:      controllerArgs(cfg, KubeScheduler, name),
		Files:     kubeconfigFiles(kc, cfg.PKI.KubeScheduler),
		Ports:     map[string]int{"https": cfg.Ports[name]},
		Readiness: runtime.Probe{Scheme: "https", Port: cfg.Ports[name], Path: "/healthz"},
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 20, MemoryBytes: 64 << 20},
	}, nil
}

// Files of a controller's client certificate, beside its kubeconfig.
const (
	clientCertFile = "client.crt"
	clientKeyFile  = "client.key"
)

// kubeconfigFiles are a controller's kubeconfig and the client certificate
// it names by (relative) path: client-go re-reads certificate files, so
// they are Reloadable and a renewal restarts nothing.
func kubeconfigFiles(kc []byte, client pki.KeyPair) []runtime.File {
	return []runtime.File{
		{Path: "kubeconfig", Content: kc, Secret: true},
		{Path: clientCertFile, Content: client.CertPEM, Reloadable: true},
		{Path: clientKeyFile, Content: client.KeyPEM, Secret: true, Reloadable: true},
	}
}

// localKubeconfig is the kubeconfig of a component that reaches its API
// server at the published endpoint on one host, at the API servers'
// Service in pods. Its client certificate is in files beside it
// (kubeconfigFiles).
func localKubeconfig(cfg Config, component, name string) ([]byte, error) {
	server := "https://" + net.JoinHostPort(cfg.endpointHost(), strconv.Itoa(cfg.Ports[EndpointPort]))
	if cfg.idleWake() {
		// Not through the public endpoint: a controller's watches are not
		// a client's activity.
		server = "https://" + net.JoinHostPort(loopback, strconv.Itoa(cfg.Ports[proxyInternalPort]))
	}
	if cfg.pods() {
		name = component // replicas have equal files
		server = "https://" + net.JoinHostPort(cfg.Layout.Host(KubeAPIServer, ""), strconv.Itoa(cfg.apiServerPort(0)))
	}
	return kubeconfig.Render(kubeconfig.Params{
		Name:           name,
		Server:         server,
		CAPEM:          cfg.PKI.Bundle(pki.RootCAName),
		ClientCertFile: clientCertFile,
		ClientKeyFile:  clientKeyFile,
	})
}
