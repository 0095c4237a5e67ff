package components

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

func renderKubeAPIServer(cfg Config, i int) (runtime.Spec, error) {
	name := instanceName(KubeAPIServer, i, cfg.replicas().KubeAPIServer)
	p := cfg.PKI
	port := cfg.apiServerPort(i)
	dir := cfg.dir(KubeAPIServer, name)
	encryption, err := encryptionConfig(cfg.EncryptionKey)
	if err != nil {
		return runtime.Spec{}, err
	}
	args := []string{
		"--etcd-servers=" + etcdServers(cfg),
		"--etcd-cafile=" + dir("etcd-ca.crt"),
		"--etcd-certfile=" + dir("etcd-client.crt"),
		"--etcd-keyfile=" + dir("etcd-client.key"),
		"--bind-address=" + cfg.apiServerBindAddress(),
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + dir("certs"),
		"--tls-cert-file=" + dir("server.crt"),
		"--tls-private-key-file=" + dir("server.key"),
		"--client-ca-file=" + dir("client-ca.crt"),
		// The discovery document at ISSUER/.well-known/openid-configuration
		// names its key set at the issuer too: by default the API server
		// would name its advertise address, which the cluster's pods
		// cannot reach (the `kubernetes` Service is the node-local proxy),
		// and a published issuer is served from storage, not from here
		// (docs/workload-identity.md).
		"--service-account-issuer=" + cfg.issuer(),
		"--service-account-jwks-uri=" + cfg.issuer() + "/openid/v1/jwks",
		"--service-account-key-file=" + dir("service-account.pub"),
		// Every token expires within MaxTokenExpiration, the kubelet's
		// too (it renews them at 80 % of their life): a rotated
		// service-account key can be retired once that has passed since
		// the new key signs (docs/workload-identity.md).
		"--service-account-max-token-expiration=" + MaxTokenExpiration.String(),
		"--service-account-extend-token-expiration=false",
		"--service-account-signing-key-file=" + dir("service-account.key"),
		"--service-cluster-ip-range=" + cfg.ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--enable-bootstrap-token-auth=true",
		"--enable-admission-plugins=NodeRestriction",
		"--kubelet-client-certificate=" + dir("kubelet-client.crt"),
		"--kubelet-client-key=" + dir("kubelet-client.key"),
		"--kubelet-certificate-authority=" + dir("kubelet-ca.crt"),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--requestheader-client-ca-file=" + dir("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--proxy-client-cert-file=" + dir("front-proxy-client.crt"),
		"--proxy-client-key-file=" + dir("front-proxy-client.key"),
		"--encryption-provider-config=" + dir("encryption-config.yaml"),
		"--audit-policy-file=" + dir("audit-policy.yaml"),
		"--audit-log-path=" + dir("audit.log"),
		"--audit-log-maxsize=100",
		"--audit-log-maxbackup=3",
		"--allow-privileged=true",
		"--profiling=false",
		// The control plane writes the `kubernetes` Service's endpoints
		// (spec.networking.apiServer, the node-local API proxy): no API
		// server address is reachable from the hosted cluster's pods.
		"--endpoint-reconciler-type=none",
		// A stopping API server otherwise keeps its process until the
		// runtime's stop grace (10 s) runs out, waiting for clients'
		// watches to end: the fence of a migration, a hibernation and a
		// restart all waited for it. Watch clients reconnect anyway.
		"--shutdown-watch-termination-grace-period=2s",
	}
	// The leaves are Reloadable (docs/security.md, "Certificate
	// renewal"): the serving and front-proxy certificates are watched by
	// the API server's dynamic certificate controllers, and the etcd and
	// kubelet client certificates are read per new connection. The
	// client and front-proxy CA bundles are watched too, which a root-CA
	// rotation relies on ("CA rotation"); the etcd and kubelet CAs are
	// read once (readOnceTrust).
	files := append(append(cfg.readOnceTrust("etcd-ca.crt", name, pki.EtcdCAName), cfg.readOnceTrust("kubelet-ca.crt", name, pki.KubeletCAName)...),
		runtime.File{Path: "etcd-client.crt", Content: p.EtcdClient.CertPEM, Reloadable: true},
		runtime.File{Path: "etcd-client.key", Content: p.EtcdClient.KeyPEM, Secret: true, Reloadable: true},
		runtime.File{Path: "server.crt", Content: p.KubeAPIServer.CertPEM, Reloadable: true},
		runtime.File{Path: "server.key", Content: p.KubeAPIServer.KeyPEM, Secret: true, Reloadable: true},
		runtime.File{Path: "client-ca.crt", Content: p.Bundle(pki.ClientCAName), Reloadable: true},
		runtime.File{Path: "service-account.pub", Content: p.ServiceAccountPublicKeys()},
		runtime.File{Path: "service-account.key", Content: p.ServiceAccountKey.KeyPEM, Secret: true},
		runtime.File{Path: "kubelet-client.crt", Content: p.KubeAPIServerKubeletClient.CertPEM, Reloadable: true},
		runtime.File{Path: "kubelet-client.key", Content: p.KubeAPIServerKubeletClient.KeyPEM, Secret: true, Reloadable: true},
		runtime.File{Path: "front-proxy-ca.crt", Content: p.Bundle(pki.FrontProxyCAName), Reloadable: true},
		runtime.File{Path: "front-proxy-client.crt", Content: p.FrontProxyClient.CertPEM, Reloadable: true},
		runtime.File{Path: "front-proxy-client.key", Content: p.FrontProxyClient.KeyPEM, Secret: true, Reloadable: true},
		runtime.File{Path: "encryption-config.yaml", Content: encryption, Secret: true},
		runtime.File{Path: "audit-policy.yaml", Content: []byte(auditPolicy)},
	)
	if !cfg.Management {
		egress, err := cfg.egressSelectorFile()
		if err != nil {
			return runtime.Spec{}, fmt.Errorf("%s: %w", name, err)
		}
		args = append(args, "--egress-selector-config-file="+dir(egress.Path), "--watch-cache-sizes="+uncachedWatchCacheSizes())
		// The API server opens the socket only when it dials into the
		// cluster, so it does not wait for the server: waiting cost every
		// create ~0.3 s (docs/performance.md); a dial in the server's first
		// moments fails as during a restart of it.
		files = append(files, egress)
	}
	if cfg.workloadIdentityWebhook() {
		admission, err := webhookAdmissionFiles(dir, cfg.Ports[WorkloadIdentityWebhookPort])
		if err != nil {
			return runtime.Spec{}, fmt.Errorf("%s: %w", name, err)
		}
		args = append(args, "--admission-control-config-file="+dir("admission-config.yaml"))
		files = append(files, admission...)
	}
	spec := runtime.Spec{
		Name:      name,
		Component: KubeAPIServer,
		Version:   cfg.version(),
		Args:      args,
		Files:     files,
		Ports:     map[string]int{PublishedPort: port},
		// The operator's clients: the hosted API and its health.
		OperatorPorts: []string{PublishedPort},
		Readiness:     runtime.Probe{Scheme: "https", Host: cfg.probeHost(cfg.apiServerBindAddress()), Port: port, Path: "/readyz", CAPEM: p.Bundle(pki.RootCAName)},
		// GOGC=50: ~38 MiB less heap when idle. Every core: the API
		// server's start is the create, and it serves the tenant's nodes
		// (one core made 1,000 nodes Ready 1.6 times slower).
		Env:      cfg.hostedGCEnv(),
		Requests: runtime.Resources{MilliCPU: 200, MemoryBytes: 384 << 20},
	}
	if endpointInstance(cfg) == KubeAPIServer && !cfg.Management {
		spec.Publish = cfg.publish(cfg.APIServer, EndpointPort, PublishedPort)
	}
	return spec, nil
}

// WatchCached are the resources a hosted API server keeps a watch cache
// for: those whose watchers or writes grow with the nodes. Every node's
// kubelet watches its pods and its node, Services, the ConfigMaps and
// Secrets its pods mount, CSIDrivers and RuntimeClasses, and writes its
// Lease every 10 s, its CSINode and its certificate requests; kube-proxy
// and CoreDNS watch Services, EndpointSlices, Endpoints and Namespaces;
// DaemonSets get a pod and a status change per node. The cache serves
// every watcher from one etcd watch, and an update of a cached object
// starts from the cached copy instead of an etcd read: without the caches
// of CertificateSigningRequests, DaemonSets and CSINodes, 1,000 simulated
// nodes took 136–165 s to be Ready instead of 106–124 s
// (docs/performance.md, "The watch cache kept for what nodes use").
//
// Every other built-in resource (uncachedResources) is watched by a
// handful of controllers; each of its watches goes to etcd, as does each
// list. A watch cache costs an idle API server a timer every second per
// resource (its bookmarks): ~5–7 millicores per idle control plane over
// those resources. A resource that a later Kubernetes release adds keeps
// its cache, and so do custom resources.
var WatchCached = []string{
	"pods", "nodes", "services", "endpoints", "endpointslices.discovery.k8s.io",
	"configmaps", "secrets", "namespaces",
	"csidrivers.storage.k8s.io", "runtimeclasses.node.k8s.io", "leases.coordination.k8s.io",
	"certificatesigningrequests.certificates.k8s.io", "daemonsets.apps", "csinodes.storage.k8s.io",
}

// uncachedResources are the resources, as resource[.group], whose watch
// cache a hosted API server turns off (WatchCached is why). A name the API
// server does not serve is ignored, so one list fits every release.
var uncachedResources = []string{
	"limitranges", "persistentvolumeclaims", "persistentvolumes", "podtemplates",
	"replicationcontrollers", "resourcequotas", "serviceaccounts",
	"mutatingadmissionpolicies.admissionregistration.k8s.io",
	"mutatingadmissionpolicybindings.admissionregistration.k8s.io",
	"mutatingwebhookconfigurations.admissionregistration.k8s.io",
	"validatingadmissionpolicies.admissionregistration.k8s.io",
	"validatingadmissionpolicybindings.admissionregistration.k8s.io",
	"validatingwebhookconfigurations.admissionregistration.k8s.io",
	"customresourcedefinitions.apiextensions.k8s.io",
	"apiservices.apiregistration.k8s.io",
	"controllerrevisions.apps", "deployments.apps", "replicasets.apps", "statefulsets.apps",
	"horizontalpodautoscalers.autoscaling",
	"cronjobs.batch", "jobs.batch",
	"clustertrustbundles.certificates.k8s.io",
	"podcertificaterequests.certificates.k8s.io",
	"flowschemas.flowcontrol.apiserver.k8s.io",
	"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
	"ingressclasses.networking.k8s.io", "ingresses.networking.k8s.io", "ipaddresses.networking.k8s.io",
	"networkpolicies.networking.k8s.io", "servicecidrs.networking.k8s.io",
	"poddisruptionbudgets.policy",
	"clusterrolebindings.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io",
	"rolebindings.rbac.authorization.k8s.io", "roles.rbac.authorization.k8s.io",
	"deviceclasses.resource.k8s.io", "devicetaintrules.resource.k8s.io", "resourceclaims.resource.k8s.io",
	"resourceclaimtemplates.resource.k8s.io", "resourceslices.resource.k8s.io",
	"priorityclasses.scheduling.k8s.io",
	"csistoragecapacities.storage.k8s.io", "storageclasses.storage.k8s.io",
	"volumeattachments.storage.k8s.io", "volumeattributesclasses.storage.k8s.io",
	"storageversionmigrations.storagemigration.k8s.io",
}

// uncachedWatchCacheSizes is the --watch-cache-sizes value that turns the
// watch cache off for uncachedResources (a size of 0 turns it off; the
// API server sizes the others itself).
func uncachedWatchCacheSizes() string {
	sizes := make([]string, len(uncachedResources))
	for i, r := range uncachedResources {
		sizes[i] = r + "#0"
	}
	return strings.Join(sizes, ",")
}

// PublishedPort is the port name, in the Spec of the instance behind the
// API endpoint, that is published as EndpointPort.
const PublishedPort = "https"

// renderKubeAPIServerProxy is the stable endpoint of replicated API servers:
// a TCP proxy (TLS passes through) run as its own supervised process, so
// the endpoint does not depend on the operator.
func renderKubeAPIServerProxy(cfg Config) runtime.Spec {
	port, health := cfg.Ports[EndpointPort], cfg.Ports[proxyHealthPort]
	flags := endpointproxy.Config{
		Listen:        net.JoinHostPort(cfg.endpointHost(), strconv.Itoa(port)),
		HealthListen:  net.JoinHostPort(loopback, strconv.Itoa(health)),
		BackendCAFile: path(cfg.Layout.Dir, KubeAPIServerProxy, "ca.crt"),
	}
	for i := range cfg.replicas().KubeAPIServer {
		flags.Backends = append(flags.Backends, net.JoinHostPort(loopback, strconv.Itoa(cfg.apiServerPort(i))))
	}
	readiness := runtime.Probe{Scheme: "http", Port: health, Path: "/readyz"}
	ports := map[string]int{PublishedPort: port, "health": health}
	if cfg.idleWake() {
		internal := cfg.Ports[proxyInternalPort]
		flags.InternalListen = net.JoinHostPort(loopback, strconv.Itoa(internal))
		flags.WakeOnRequest = true
		ports["internal"] = internal
		// It runs, and holds clients, while the control plane sleeps.
		readiness.Path = "/healthz"
	}
	return runtime.Spec{
		Name:      KubeAPIServerProxy,
		Component: KubeAPIServerProxy,
		Args:      flags.Args(),
		Files:     []runtime.File{{Path: "ca.crt", Content: cfg.PKI.Bundle(pki.RootCAName), Reloadable: true}},
		Ports:     ports,
		Publish:   cfg.publish(cfg.APIServer, EndpointPort, PublishedPort),
		Env:       cfg.hostedEnv(),
		Requests:  runtime.Resources{MilliCPU: 10, MemoryBytes: 32 << 20},
		// Ready while it routes to at least one ready API server.
		Readiness: readiness,
	}
}
