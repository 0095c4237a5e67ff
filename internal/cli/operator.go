package cli

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/controller/nodepool"
	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/managementplane"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/scheme"
)

func newOperatorCommand(g *globalOptions) *cobra.Command {
	var metricsAddress, healthAddress, endpointHost string
	var installAPI bool
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run the hypershift controllers against a management cluster",
		Long: "Run the HostedCluster and HostedControlPlane controllers against the management cluster of --kubeconfig.\n" +
			"Hosted control planes run as local processes under DATA_DIR/clusters.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := managementplane.EnsureDataDir(g.dataDir); err != nil {
				return err
			}
			lock, err := managementplane.LockDataDir(g.dataDir)
			if err != nil {
				return err
			}
			defer lock.Unlock()
			log := zap.New()
			ctrl.SetLogger(log)
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			if installAPI {
				c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
				if err != nil {
					return err
				}
				if err := install.Install(cmd.Context(), c); err != nil {
					return fmt.Errorf("install hypershift.dev API: %w", err)
				}
			}
			mgr, rt, nodes, err := newLocalOperator(g.dataDir, log, operator.Options{
				RESTConfig:         cfg,
				MetricsBindAddress: metricsAddress, HealthProbeBindAddress: healthAddress,
				EndpointHost: endpointHost,
			})
			if err != nil {
				return err
			}
			// Hosted control planes keep running when the operator exits;
			// the next operator adopts them.
			defer rt.Release()
			defer nodes.Release()
			return mgr.Start(ctrl.SetupSignalHandler())
		},
	}
	f := cmd.Flags()
	f.StringVar(&metricsAddress, "metrics-bind-address", "127.0.0.1:8383", "address of Prometheus metrics (\"0\" disables)")
	f.StringVar(&healthAddress, "health-probe-bind-address", "127.0.0.1:8384", "address of /healthz and /readyz (\"0\" disables)")
	f.StringVar(&endpointHost, "endpoint-host", "127.0.0.1", "address clients and nodes use to reach hosted API servers")
	f.BoolVar(&installAPI, "install-crds", true, "install or upgrade the hypershift.dev CRDs at start")
	return cmd
}

// newLocalOperator builds the operator with control planes and node agents
// as local processes under dataDir: hosted control planes in
// DATA_DIR/clusters, node agents in DATA_DIR/nodes. opts supplies the
// management cluster and the listen addresses; the rest is filled in here.
func newLocalOperator(dataDir string, log logr.Logger, opts operator.Options) (ctrl.Manager, *process.Runtime, *process.Runtime, error) {
	events, notify := operator.NewEvents()
	hosted, err := process.New(process.Options{Root: managementplane.ClustersDir(dataDir), Log: log.WithName("hosted"), OnChange: notify})
	if err != nil {
		return nil, nil, nil, err
	}
	nodeEvents, notifyNodes := nodepool.NewRuntimeEvents()
	nodes, err := process.New(process.Options{Root: nodesDir(dataDir), Log: log.WithName("nodes"), OnChange: notifyNodes})
	if err != nil {
		return nil, nil, nil, err
	}
	opts.Runtime, opts.Events = hosted, events
	opts.NodeRuntime, opts.NodeEvents = nodes, nodeEvents
	if ip := hostnet.HostIPv4(); ip != nil {
		opts.AdvertiseAddress = ip.String()
	}
	mgr, err := operator.New(opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return mgr, hosted, nodes, nil
}
