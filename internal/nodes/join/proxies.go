package join

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/nodes/podnet"
	"hypershift.dev/internal/runtime"
)

// kube-proxy's well-known ports, on loopback only.
const (
	kubeProxyMetricsPort = 10249
	kubeProxyHealthzPort = 10256
)

// kubeProxySpec renders kube-proxy as a process of the node daemon rather
// than a DaemonSet: Services (and so cluster DNS and the `kubernetes`
// Service) must route before any pod runs, and a pod network cannot carry
// the component that makes it work. It runs with the kubelet's rotated
// client certificate (the node's identity; system:node-proxier is bound to
// system:nodes), which exists once the kubelet is ready.
func (n *Node) kubeProxySpec() runtime.Spec {
	dir := n.path(Ref.Namespace, KubeProxy)
	return runtime.Spec{
		Name:      KubeProxy,
		Component: KubeProxy,
		Args:      []string{"--config=" + filepath.Join(dir, "config.yaml")},
		Files:     append([]runtime.File{{Path: "config.yaml", Content: []byte(n.kubeProxyConfig())}}, n.trustFiles()...),
		Ports:     map[string]int{"kube-proxy-metrics": kubeProxyMetricsPort, "kube-proxy-healthz": kubeProxyHealthzPort},
		Readiness: runtime.Probe{Scheme: "http", Port: kubeProxyHealthzPort, Path: "/healthz"},
		After:     []string{Kubelet},
	}
}

// kubeProxyConfig is iptables mode with no global kernel parameter
// written: conntrack table size and timeouts are left as the host has them
// (maxPerCore 0, timeouts 0s) and NodePorts are not served on localhost
// (which would need route_localnet).
func (n *Node) kubeProxyConfig() string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		`apiVersion: kubeproxy.config.k8s.io/v1alpha1`,
		`kind: KubeProxyConfiguration`,
		`clientConnection:`,
		`  kubeconfig: ` + q(n.KubeletKubeconfig()),
		`mode: iptables`,
		`clusterCIDR: ` + q(n.Network.ClusterCIDR),
		`hostnameOverride: ` + q(n.Name),
		fmt.Sprintf(`metricsBindAddress: "127.0.0.1:%d"`, kubeProxyMetricsPort),
		fmt.Sprintf(`healthzBindAddress: "127.0.0.1:%d"`, kubeProxyHealthzPort),
		`iptables:`,
		`  localhostNodePorts: false`,
		`conntrack:`,
		`  maxPerCore: 0`,
		`  tcpEstablishedTimeout: 0s`,
		`  tcpCloseWaitTimeout: 0s`,
		``,
	}, "\n")
}

// apiServerProxySpec renders the node-local address of the hosted API
// server: hypershift's endpoint proxy (TLS passes through) on the
// cluster's advertise address, which join adds to lo, forwarding to the
// server the node joined, health-checked with the pinned CA. Pods reach
// the `kubernetes` Service through it.
func (n *Node) apiServerProxySpec() runtime.Spec {
	dir := n.path(Ref.Namespace, APIServerProxy)
	cfg := endpointproxy.Config{
		Listen:        n.APIServerAddress(),
		HealthListen:  net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Ports[portAPIServerProxy])),
		BackendCAFile: filepath.Join(dir, "ca.crt"),
		Backends:      []string{serverHostPort(n.Server)},
	}
	return runtime.Spec{
		Name:      APIServerProxy,
		Component: endpointproxy.Name,
		Args:      cfg.Args(),
		// The proxy re-reads its CA file (endpointproxy.reloadingPool):
		// a rotated CA bundle applies without dropping pods' connections.
		Files:     []runtime.File{{Path: "ca.crt", Content: []byte(n.CA), Reloadable: true}},
		Ports:     map[string]int{portAPIServerProxy: n.Ports[portAPIServerProxy]},
		Readiness: runtime.Probe{Scheme: "http", Port: n.Ports[portAPIServerProxy], Path: "/readyz"},
	}
}

// APIServerAddress is where the node's API server proxy listens.
func (n *Node) APIServerAddress() string {
	return net.JoinHostPort(n.Network.APIServerAdvertiseAddress, strconv.Itoa(int(n.Network.APIServerPort)))
}

// serverHostPort is the HOST:PORT of an https URL (443 when it names none).
func serverHostPort(server string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return u.Host
}

// podNetworkSpec renders the pod network between nodes (package podnet:
// flannel's host-gw backend): routes to the other nodes' pod CIDRs through
// their addresses. It runs with the kubelet's client certificate, once
// the kubelet is ready.
func (n *Node) podNetworkSpec() runtime.Spec {
	netConf := fmt.Sprintf(`{"Network": %q, "Backend": {"Type": "host-gw"}}`, n.Network.ClusterCIDR)
	dir := n.path(Ref.Namespace, podnet.Name)
	o := podnet.Options{
		Kubeconfig:   n.KubeletKubeconfig(),
		NetConf:      filepath.Join(dir, "net-conf.json"),
		NodeName:     n.Name,
		PublicIP:     n.NodeIP,
		HealthListen: net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Ports[portPodNetwork])),
	}
	return runtime.Spec{
		Name:      podnet.Name,
		Component: podnet.Name,
		Args:      o.Args(),
		// It reads the kubelet's kubeconfig once, as kube-proxy does: a CA
		// rotation restarts it.
		Files:     append([]runtime.File{{Path: "net-conf.json", Content: []byte(netConf)}}, n.trustFiles()...),
		Ports:     map[string]int{portPodNetwork: n.Ports[portPodNetwork]},
		Readiness: runtime.Probe{Scheme: "http", Port: n.Ports[portPodNetwork], Path: "/healthz"},
		After:     []string{Kubelet},
	}
}
