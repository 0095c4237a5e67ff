package join

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/endpointproxy"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/csinode"
	"hypershift.dev/internal/runtime"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// DefaultDataDir holds everything a join makes on a host, but for the
// host-wide things Reset removes by record (the node's cgroup root, the CNI
// bridge, iptables chains and network namespaces new since the join).
const DefaultDataDir = "/var/lib/hypershift-node"

// Names of what a node runs and makes.
const (
	Containerd = "containerd"
	Kubelet    = "kubelet"
	// KubeProxy routes the cluster's Services on the node.
	KubeProxy = "kube-proxy"
	// APIServerProxy is the node-local address of the hosted API server.
	APIServerProxy = endpointproxy.Name
	// Bridge is the CNI bridge of the node's pods.
	Bridge = "hs-cni0"
	// PauseImage is the sandbox image, imported from a tarball at start.
	PauseImage = "hypershift.dev/pause:1"
	// cniNetwork names the CNI network (and its cached results).
	cniNetwork = "hypershift"
	// Port names, allocated by the process runtime and kept.
	portKubelet           = "kubelet"
	portKubeletHealthz    = "kubelet-healthz"
	portContainerdMetrics = "containerd-metrics"
	portAPIServerProxy    = "kube-apiserver-proxy-healthz"
	portPodNetwork        = "pod-network-healthz"
	portCSINode           = "csi-node-healthz"
)

// Ref is the process runtime's name for a node's processes.
var Ref = runtime.ControlPlaneRef{Namespace: "components", Name: "node"}

// allocatedPorts are the ports of a node's processes the process runtime
// picks; the kubelet's is chosen by join (--kubelet-port), kube-proxy's
// are its well-known ones.
func allocatedPorts() []string {
	return []string{portKubeletHealthz, portContainerdMetrics, portAPIServerProxy, portPodNetwork, portCSINode}
}

// Node is a joined node's configuration, kept in DATA_DIR/node.json: every
// later command (the node daemon, load-image, reset) renders from it.
type Node struct {
	// Cluster is the hosted cluster as NAMESPACE/NAME.
	Cluster  string `json:"cluster"`
	NodePool string `json:"nodePool"`
	Name     string `json:"name"`
	Server   string `json:"server"`
	NodeIP   string `json:"nodeIP"`
	// ProviderID is the Node's spec.providerID (the kubelet's providerID),
	// as the machine's provider names it: Cluster API matches a Machine to
	// its Node by it. Empty: none.
	ProviderID string `json:"providerID,omitempty"`
	// ContainerdPath is the host's containerd executable.
	ContainerdPath string `json:"containerdPath"`
	CNIBinDir      string `json:"cniBinDir"`
	// CA is the pinned cluster CA: it verifies the API server.
	CA string `json:"ca"`
	// ClientCA verifies the API server's calls to the kubelet.
	ClientCA string         `json:"clientCA"`
	Ports    map[string]int `json:"ports"`
	// CgroupRoot is the kubelet's cgroup root, this node's alone
	// (cgroups.go): every pod of the node runs below it.
	CgroupRoot string `json:"cgroupRoot,omitempty"`
	// Network is the cluster's, from its join information.
	Network bootstrap.Network `json:"network"`
	// KubernetesVersion is the release the kubelet and kube-proxy run; ""
	// is the one compiled into hypershift. ReleaseSHA256 is the sha256 the
	// control plane published for its binary (upgrade.go).
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	ReleaseSHA256     string `json:"releaseSHA256,omitempty"`
	// Trust changes when a root-CA rotation changed what the kubelet
	// trusts or its client certificate (trust.go); the kubelet and
	// kube-proxy, which read them at start, restart then. Empty until the
	// first rotation, so that older nodes' specs keep their hash.
	Trust string `json:"trust,omitempty"`
	// VolumesDir is where the machine has the volumes its infrastructure
	// attached to it (docs/volumes.md); set, the node runs the CSI plugin
	// of csi.hypershift.dev that publishes them to pods. Empty: none.
	VolumesDir string `json:"volumesDir,omitempty"`
	DataDir    string `json:"-"`
}

func statePath(dataDir string) string { return filepath.Join(dataDir, "node.json") }

// Load reads a joined node's configuration; ok is false when the data
// directory holds no join. The node's DataDir is dataDir made canonical.
func Load(dataDir string) (n *Node, ok bool, err error) {
	dataDir, err = CanonicalDir(dataDir)
	if err != nil {
		return nil, false, err
	}
	data, err := os.ReadFile(statePath(dataDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	n = &Node{}
	if err := json.Unmarshal(data, n); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", statePath(dataDir), err)
	}

	n.DataDir = dataDir
	return n, true, nil
}

// checkRunnable refuses a node an older join wrote: without the cluster's
// network and CA, kube-proxy and the API server proxy cannot run.
func (n *Node) checkRunnable() error {
	if n.Network.ClusterCIDR == "" || n.Network.ClusterDNS == "" || n.Network.APIServerAdvertiseAddress == "" || n.CA == "" {
		return fmt.Errorf("%s was written by an older hypershift join (it has no cluster network or CA): undo it with `hypershift join --reset --node-dir %s` and join again",
			statePath(n.DataDir), n.DataDir)
	}
	return nil
}

// Save writes the configuration (0600: it names the cluster it joined).
func (n *Node) Save() error {
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(statePath(n.DataDir), data, 0o600)
}

func (n *Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.DataDir}, elem...)...)
}

func (n *Node) containerdState() string { return n.path("containerd", "state") }

// ContainerdSocket is the private containerd's gRPC socket.
func (n *Node) ContainerdSocket() string { return n.path("containerd.sock") }

// KubeletKubeconfig is where the kubelet writes its kubeconfig once its
// client certificate is issued.
func (n *Node) KubeletKubeconfig() string { return n.path("kubelet.conf") }

// KubeletRootDir is the kubelet's --root-dir (pod volumes are mounted here).
func (n *Node) KubeletRootDir() string { return n.path("kubelet") }

// LogPath is the log of a node process.
func (n *Node) LogPath(instance string) string {
	return n.path(Ref.Namespace, instance, instance+".log") // as the process runtime names it
}

// BootstrapKubeconfigPath holds the pool's token until the kubelet has its
// client certificate (0600).
func (n *Node) BootstrapKubeconfigPath() string { return n.path("bootstrap-kubeconfig") }

// Specs renders the node's processes: containerd, the kubelet, the API
// server proxy, kube-proxy, the pod network and, with VolumesDir, the CSI
// plugin.
func (n *Node) Specs() []runtime.Spec {
	specs := []runtime.Spec{n.ContainerdSpec(), n.runRelease(n.kubeletSpec()), n.apiServerProxySpec(), n.runRelease(n.kubeProxySpec()), n.podNetworkSpec()}
	if n.VolumesDir != "" {
		specs = append(specs, n.csiNodeSpec())
	}
	return specs
}

// csiNodeSpec renders the node plugin of csi.hypershift.dev
// (internal/nodes/csinode): it registers with the kubelet through its
// plugin directory, once the kubelet runs.
func (n *Node) csiNodeSpec() runtime.Spec {
	o := csinode.Options{
		NodeID: n.Name, AttachedDir: n.VolumesDir, KubeletDir: n.KubeletRootDir(),
		HealthListen: net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Ports[portCSINode])),
	}
	return runtime.Spec{
		Name:      csinode.Name,
		Component: csinode.Name,
		Args:      o.Args(),
		Ports:     map[string]int{portCSINode: n.Ports[portCSINode]},
		Readiness: runtime.Probe{Scheme: "http", Port: n.Ports[portCSINode], Path: "/healthz"},
		After:     []string{Kubelet},
	}
}

// ContainerdSpec renders the node's containerd alone.
func (n *Node) ContainerdSpec() runtime.Spec {
	dir := n.path(Ref.Namespace, Containerd)
	return runtime.Spec{
		Name:    Containerd,
		Command: n.ContainerdPath,
		Args:    []string{"--config", filepath.Join(dir, "config.toml")},
		Files: []runtime.File{
			{Path: "config.toml", Content: []byte(n.containerdConfig(filepath.Join(dir, "cni.conflist.tmpl")))},
			{Path: "cni.conflist.tmpl", Content: []byte(n.cniTemplate())},
		},
		Ports:     map[string]int{portContainerdMetrics: n.Ports[portContainerdMetrics]},
		Readiness: runtime.Probe{Scheme: "http", Port: n.Ports[portContainerdMetrics], Path: "/v1/metrics"},
	}
}

// containerdConfig is a private containerd: its own root, state, sockets
// and CNI configuration, so that a containerd the host already runs is not
// touched. restrict_oom_score_adj: a root without CAP_SYS_RESOURCE (a
// container host) cannot lower oom_score_adj, and runc fails without it.
func (n *Node) containerdConfig(cniTemplate string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		`version = 2`,
		`root = ` + q(n.path("containerd", "root")),
		`state = ` + q(n.containerdState()),
		`disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]`,
		``,
		`[grpc]`,
		`  address = ` + q(n.ContainerdSocket()),
		`[ttrpc]`,
		`  address = ` + q(n.ContainerdSocket()+".ttrpc"),
		`[metrics]`,
		fmt.Sprintf(`  address = "127.0.0.1:%d"`, n.Ports[portContainerdMetrics]),
		``,
		`[plugins."io.containerd.grpc.v1.cri"]`,
		`  sandbox_image = ` + q(PauseImage),
		`  restrict_oom_score_adj = true`,
		`  stream_server_address = "127.0.0.1"`,
		`  stream_server_port = "0"`,
		`[plugins."io.containerd.grpc.v1.cri".containerd]`,
		`  snapshotter = "overlayfs"`,
		`  default_runtime_name = "runc"`,
		`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]`,
		`  runtime_type = "io.containerd.runc.v2"`,
		`[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]`,
		`  SystemdCgroup = false`,
		`[plugins."io.containerd.grpc.v1.cri".cni]`,
		`  bin_dir = ` + q(n.CNIBinDir),
		`  conf_dir = ` + q(n.path("cni", "net.d")),
		`  conf_template = ` + q(cniTemplate),
		``,
	}, "\n")
}

// cniTemplate is rendered by containerd with the pod CIDR the controller
// manager gave the Node: a bridge with host-local addresses from it, and
// portmap for hostPorts. Addresses are kept under the data directory.
func (n *Node) cniTemplate() string {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       cniNetwork,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": Bridge, "isGateway": true, "ipMasq": true, "hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": "{{.PodCIDR}}"}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": n.path("cni", "ipam"),
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, _ := json.MarshalIndent(conf, "", "  ")
	return string(data) + "\n"
}

func (n *Node) kubeletSpec() runtime.Spec {
	dir := n.path(Ref.Namespace, Kubelet)
	files := []runtime.File{
		{Path: "config.yaml", Content: []byte(n.kubeletConfig(filepath.Join(dir, "client-ca.crt")))},
		{Path: "client-ca.crt", Content: []byte(n.ClientCA)},
	}
	files = append(files, n.trustFiles()...)
	return runtime.Spec{
		Name:      Kubelet,
		Component: Kubelet,
		Args: []string{
			"--config=" + filepath.Join(dir, "config.yaml"),
			"--bootstrap-kubeconfig=" + n.BootstrapKubeconfigPath(),
			"--kubeconfig=" + n.KubeletKubeconfig(),
			"--cert-dir=" + n.path("kubelet-pki"),
			"--root-dir=" + n.KubeletRootDir(),
			"--hostname-override=" + n.Name,
			"--node-ip=" + n.NodeIP,
			"--node-labels=" + hypershiftv1alpha1.NodePoolLabel + "=" + n.NodePool,
		},
		Files:     files,
		Ports:     map[string]int{portKubelet: n.Ports[portKubelet], portKubeletHealthz: n.Ports[portKubeletHealthz]},
		Readiness: runtime.Probe{Scheme: "http", Port: n.Ports[portKubeletHealthz], Path: "/healthz"},
		After:     []string{Containerd},
	}
}

// kubeletConfig follows what a kubelet needs on these hosts
// (docs/nodepools.md): cgroupfs under the node's own cgroup root, cgroup v1
// allowed, the host's address so
// the API server reaches it, webhook authentication and authorization, and
// a serving certificate the operator approves.
//
// Images are never garbage-collected by disk usage (imageGCHighThresholdPercent
// 100): the kubelet leaves the sandbox image to the runtime to pin, which
// Debian's containerd 1.6 cannot do, and images loaded with `node
// load-image` come from no registry. With the kubelet's collection the
// sandbox image went as soon as the host disk crossed 85%, and no pod could
// start again. Eviction thresholds are absolute for the same reason: the
// node shares its host's disk, whose percentages measure everything else on
// it.
func (n *Node) kubeletConfig(clientCA string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		`apiVersion: kubelet.config.k8s.io/v1beta1`,
		`kind: KubeletConfiguration`,
		`address: ` + q(n.NodeIP),
		fmt.Sprintf(`port: %d`, n.Ports[portKubelet]),
		`readOnlyPort: 0`,
		`healthzBindAddress: "127.0.0.1"`,
		fmt.Sprintf(`healthzPort: %d`, n.Ports[portKubeletHealthz]),
		`containerRuntimeEndpoint: ` + q("unix://"+n.ContainerdSocket()),
		`cgroupDriver: cgroupfs`,
		`cgroupRoot: ` + q(n.CgroupRoot),
		`failCgroupV1: false`,
		`failSwapOn: false`,
		`podLogsDir: ` + q(n.path("pod-logs")),
		`imageGCHighThresholdPercent: 100`,
		`imageGCLowThresholdPercent: 80`,
		`evictionHard:`,
		`  memory.available: 100Mi`,
		`  nodefs.available: 1Gi`,
		`  nodefs.inodesFree: 2%`,
		`  imagefs.available: 1Gi`,
		`  imagefs.inodesFree: 2%`,
		`authentication:`,
		`  anonymous:`,
		`    enabled: false`,
		`  webhook:`,
		`    enabled: true`,
		`  x509:`,
		`    clientCAFile: ` + q(clientCA),
		`authorization:`,
		`  mode: Webhook`,
		`rotateCertificates: true`,
		`serverTLSBootstrap: true`,
		`clusterDNS:`,
		`  - ` + q(n.Network.ClusterDNS),
		`clusterDomain: ` + q(n.Network.ClusterDomain),
		`resolvConf: /etc/resolv.conf`,
	}, "\n") + n.providerIDConfig() + "\n"
}

func (n *Node) providerIDConfig() string {
	if n.ProviderID == "" {
		return ""
	}
	return fmt.Sprintf("\nproviderID: %q", n.ProviderID)
}

// CheckProviderID refuses a provider ID that is not PROVIDER://ID.
func CheckProviderID(id string) error {
	if id == "" {
		return nil
	}
	if scheme, rest, ok := strings.Cut(id, "://"); !ok || scheme == "" || rest == "" || len(id) > 256 || strings.ContainsAny(id, " \t\n\"") {
		return fmt.Errorf("--provider-id %q: want PROVIDER://ID (at most 256 characters, no spaces or quotes), as the machine's provider names it", id)
	}
	return nil
}

// BootstrapKubeconfig renders the kubelet's bootstrap kubeconfig.
func BootstrapKubeconfig(c *Cluster) ([]byte, error) {
	id, secret, _ := strings.Cut(c.Token, ".")
	return bootstrap.Kubeconfig(c.Server, c.CAPEM, bootstrap.Token{ID: id, Secret: secret})
}

// trustFiles restart a component that reads the kubelet's kubeconfig and
// client certificate only at start when a root-CA rotation changed them.
func (n *Node) trustFiles() []runtime.File {
	if n.Trust == "" {
		return nil
	}
	return []runtime.File{{Path: "trust", Content: []byte(n.Trust + "\n")}}
}
