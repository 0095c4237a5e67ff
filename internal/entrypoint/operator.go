package entrypoint

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/controller/nodepool/platform/aws"
	"hypershift.dev/internal/image"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/nodes/machine"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime/kube"
)

// operatorFlags are the flags of `hypershift operator`.
type operatorFlags struct {
	metricsAddress, healthAddress, endpointHost string
	metricsSecure                               bool
	installAPI                                  bool
	runtime, image, machineImage, kubeletDir    string
	leaderElect                                 bool
	leaderElectionNamespace                     string
	awsProviderNamespace                        string
	etcdStorageClass, etcdStorageSize           string
	releases                                    release.DirFlag
	validity                                    certValidityFlags
	processRuntime                              processRuntimeFlags
	machinesDir                                 string
}

// kubeOnly are the flags that mean something only with --runtime=kube.
var kubeOnly = []string{"image", "machine-image", "kubelet-dir", "leader-elect", "leader-election-namespace", "etcd-storage-class", "etcd-storage-size"}

// validate checks the flags before anything starts and returns the kube
// runtime's options (for --runtime=kube).
func (f *operatorFlags) validate(cmd *cobra.Command) (kube.Options, error) {
	if err := f.validity.validate(); err != nil {
		return kube.Options{}, err
	}
	if err := f.processRuntime.validate(); err != nil {
		return kube.Options{}, err
	}
	if f.runtime == install.RuntimeKube && cmd.Flags().Changed(machinesDirFlagName) {
		return kube.Options{}, fmt.Errorf("--%s needs --runtime=process: machines are made on the operator's own host", machinesDirFlagName)
	}
	switch f.runtime {
	case install.RuntimeProcess:
		for _, name := range kubeOnly {
			if cmd.Flags().Changed(name) {
				return kube.Options{}, fmt.Errorf("--%s needs --runtime=kube: the process runtime runs control planes on this host, one operator per data dir", name)
			}
		}
		return kube.Options{}, nil
	case install.RuntimeKube:
		for _, name := range processOnlyFlags {
			if cmd.Flags().Changed(name) {
				return kube.Options{}, fmt.Errorf("--%s needs --runtime=process: on the kube runtime the management cluster's scheduler shares the CPU by the pods' requests and paces their starts", name)
			}
		}
	default:
		return kube.Options{}, fmt.Errorf("--runtime %q: use %s (control planes as processes of this host) or %s (as pods of the management cluster)",
			f.runtime, install.RuntimeProcess, install.RuntimeKube)
	}
	if err := (install.Options{Image: f.image, MachineImage: f.machineImage, KubeletDir: f.kubeletDir}).Validate(); err != nil {
		return kube.Options{}, err
	}
	if f.etcdStorageClass != "" {
		if errs := validation.IsDNS1123Subdomain(f.etcdStorageClass); len(errs) > 0 {
			return kube.Options{}, fmt.Errorf("--etcd-storage-class %q is not a valid StorageClass name: %s", f.etcdStorageClass, strings.Join(errs, "; "))
		}
	}
	size, err := resource.ParseQuantity(f.etcdStorageSize)
	if err != nil || size.Sign() <= 0 {
		return kube.Options{}, fmt.Errorf("--etcd-storage-size %q is not a positive quantity (e.g. 8Gi)", f.etcdStorageSize)
	}
	// The namespace the operator runs in, which the control planes'
	// NetworkPolicies admit: its pod's, else (outside the cluster) the
	// one its lease is in.
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = f.leaderElectionNamespace
	}
	maxMachines := kube.DefaultMaxMachines
	if cmd.Flags().Changed(maxMachinesFlagName) {
		maxMachines = f.processRuntime.maxMachines
	}
	return kube.Options{
		Image:             f.image,
		MachineImage:      f.machineImage,
		MaxMachines:       maxMachines,
		KubeletDir:        f.kubeletDir,
		StorageClassName:  f.etcdStorageClass,
		EtcdStorageSize:   size,
		PriorityClassName: install.PriorityClassName,
		Namespace:         ns,
	}, nil
}

// restConfig finds the management cluster; with --runtime=kube and no
// kubeconfig given, the cluster the operator's pod runs in.
func (f *operatorFlags) restConfig(g *clusterclient.Management) (*rest.Config, error) {
	if f.runtime == install.RuntimeKube && g.Kubeconfig == "" && os.Getenv("KUBECONFIG") == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return cfg, nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
	}
	return g.RESTConfig()
}

func newOperatorCommand(g *clusterclient.Management) *cobra.Command {
	o := &operatorFlags{}
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the hypershift controllers against a management cluster",
		Long: "Run the HostedCluster and HostedControlPlane controllers against the management cluster of --kubeconfig.\n" +
			"With --runtime=process (the default) hosted control planes run as local processes under DATA_DIR/clusters;\n" +
			"with --runtime=kube they run as pods of the management cluster (see `hypershift install`).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kubeOpts, err := o.validate(cmd)
			if err != nil {
				return err
			}
			machines, endpointHost, err := machinesOption(o.machinesDir, o.endpointHost, cmd.Flags().Changed("endpoint-host"))
			if err != nil {
				return err
			}
			if err := o.validity.applyClientCertReload(); err != nil {
				return err
			}
			if err := checkListeners(cmd.Flags(), cmd.ErrOrStderr(), operatorListenerFlags...); err != nil {
				return err
			}
			releases, err := o.releases.Load()
			if err != nil {
				return err
			}
			log := zap.New()
			ctrl.SetLogger(log)
			cfg, err := o.restConfig(g)
			if err != nil {
				return err
			}
			opts := operator.Options{
				RESTConfig:         cfg,
				MetricsBindAddress: o.metricsAddress, MetricsSecure: o.metricsSecure, HealthProbeBindAddress: o.healthAddress,
				EndpointHost:            endpointHost,
				Machines:                machines,
				Releases:                releases,
				LeafCertificateValidity: o.validity.leaf, CAValidity: o.validity.ca,
				MaxStartingControlPlanes: o.processRuntime.maxStarting,
				ControlPlaneNice:         o.processRuntime.nice,
				MaxMachines:              o.processRuntime.maxMachines,
				AWSProviderNamespace:     o.awsProviderNamespace,
			}
			if o.runtime == install.RuntimeKube {
				opts.LeaderElection = o.leaderElect
				opts.LeaderElectionNamespace = kubeOpts.Namespace
				return operator.RunKube(ctrl.SetupSignalHandler(), opts, kubeOpts, o.installAPI, log)
			}
			if opts.BackupFileRoot, err = o.processRuntime.backupRoot(g.Layout()); err != nil {
				return err
			}
			return operator.Run(ctrl.SetupSignalHandler(), g.Layout(), opts, o.installAPI, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.metricsAddress, "metrics-bind-address", "127.0.0.1:8383", "address of Prometheus metrics (\"0\" disables)")
	f.BoolVar(&o.metricsSecure, "metrics-secure", false, "serve metrics over HTTPS to bearer tokens the management API server authenticates and authorizes for GET /metrics (hypershift install sets it)")
	f.StringVar(&o.healthAddress, "health-probe-bind-address", "127.0.0.1:8384", "address of /healthz and /readyz (\"0\" disables)")
	f.StringVar(&o.endpointHost, "endpoint-host", "127.0.0.1", "address clients and nodes use to reach hosted API servers")
	f.BoolVar(&o.installAPI, "install-crds", true, "install or upgrade the hypershift.dev CRDs and the runtime's admission policies at start")
	f.StringVar(&o.runtime, "runtime", install.RuntimeProcess, "where hosted control planes run: process (this host) or kube (pods of the management cluster)")
	f.StringVar(&o.image, "image", image.Ref(), "with --runtime=kube: the image of control-plane pods")
	f.StringVar(&o.kubeletDir, "kubelet-dir", install.DefaultKubeletDir, "with --runtime=kube: the kubelet's root directory on the management cluster's nodes, where machine pods get the hot-plug directories their volumes are attached in (docs/volumes.md); empty: volumes are not attached")
	f.StringVar(&o.machineImage, "machine-image", "", "with --runtime=kube: the image of the machines of Host NodePools, privileged pods (hypershift image save --machine); empty: no machines are made")
	f.StringVar(&o.awsProviderNamespace, "aws-provider-namespace", aws.DefaultProviderNamespace, "namespace cluster-api-provider-aws runs in, where the Secrets of AWS clusters' identities are written (docs/platforms.md)")
	f.BoolVar(&o.leaderElect, "leader-elect", false, "with --runtime=kube: elect a leader among replicas (Lease "+operator.LeaderElectionID+")")
	f.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "with --leader-elect: namespace of the Lease (default: $POD_NAMESPACE, then the pod's own)")
	f.StringVar(&o.etcdStorageClass, "etcd-storage-class", "", "with --runtime=kube: StorageClass of etcd's volumes (default: the cluster's default)")
	f.StringVar(&o.etcdStorageSize, "etcd-storage-size", "8Gi", "with --runtime=kube: size of each etcd member's volume")
	f.StringVar(&o.machinesDir, machinesDirFlagName, "", machinesDirUsage)
	o.releases.AddFlag(f)
	o.validity.add(f)
	o.processRuntime.add(f)
	return cmd
}

// machinesDirFlagName is the flag of `up` and `operator` that runs the
// HostMachine provider.
const machinesDirFlagName = "machines-dir"

const machinesDirUsage = "run Cluster API's HostMachine provider: machines for Host NodePools in this machines directory, " +
	"whose machine network `hypershift machine network` made (needs root; --endpoint-host defaults to the network's gateway)"

// geteuid is os.Geteuid; tests change it.
var geteuid = os.Geteuid

// machinesOption checks --machines-dir and returns the machines directory
// (nil when dir is empty) and the endpoint host to use. Machines need root
// and a machine network; they reach hosted API servers only through the
// network's gateway, so the endpoint host is the gateway: by default when
// --endpoint-host was not given (endpointHostSet), and another one is
// refused.
func machinesOption(dir, endpointHost string, endpointHostSet bool) (*machine.Host, string, error) {
	if dir == "" {
		return nil, endpointHost, nil
	}
	if geteuid() != 0 {
		return nil, "", fmt.Errorf("--%s needs root: machines are namespaces, mounts and links of this host (run it with sudo)", machinesDirFlagName)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", fmt.Errorf("--%s %s: %w", machinesDirFlagName, dir, err)
	}
	// As `hypershift machine` names it: mount points are read as real
	// paths.
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	h := &machine.Host{Dir: abs}
	n, err := h.Network()
	if errors.Is(err, machine.ErrNoNetwork) {
		return nil, "", fmt.Errorf("--%s %s has no machine network: make one with `sudo hypershift machine network --machines-dir %s`", machinesDirFlagName, dir, abs)
	}
	if err != nil {
		return nil, "", fmt.Errorf("--%s %s: %w", machinesDirFlagName, dir, err)
	}
	gateway := n.Gateway.String()
	if !endpointHostSet {
		return h, gateway, nil
	}
	if addr, err := netip.ParseAddr(endpointHost); err != nil || addr != n.Gateway {
		return nil, "", fmt.Errorf("--endpoint-host %s: machines reach hosted API servers only through their gateway %s; "+
			"leave --endpoint-host out (with --%s it is the gateway) or set it to %s", endpointHost, gateway, machinesDirFlagName, gateway)
	}
	return h, gateway, nil
}
