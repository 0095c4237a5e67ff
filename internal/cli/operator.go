package cli

import (
	"fmt"

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
			log := zap.New()
			ctrl.SetLogger(log)
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			if installAPI {
				c, err := client.New(cfg, client.Options{})
				if err != nil {
					return err
				}
				if err := install.Install(cmd.Context(), c); err != nil {
					return fmt.Errorf("install hypershift.dev API: %w", err)
				}
			}
			events, notify := operator.NewEvents()
			rt, err := process.New(process.Options{Root: managementplane.ClustersDir(g.dataDir), Log: log, OnChange: notify})
			if err != nil {
				return err
			}
			nodeEvents, notifyNodes := nodepool.NewRuntimeEvents()
			nodes, err := process.New(process.Options{Root: nodesDir(g.dataDir), Log: log.WithName("nodes"), OnChange: notifyNodes})
			if err != nil {
				return err
			}
			advertise := ""
			if ip := hostnet.HostIPv4(); ip != nil {
				advertise = ip.String()
			}
			mgr, err := operator.New(operator.Options{
				RESTConfig: cfg, Runtime: rt, Events: events,
				NodeRuntime: nodes, NodeEvents: nodeEvents,
				MetricsBindAddress: metricsAddress, HealthProbeBindAddress: healthAddress,
				EndpointHost: endpointHost, AdvertiseAddress: advertise,
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
	f.StringVar(&metricsAddress, "metrics-bind-address", ":8383", "address of Prometheus metrics (\"0\" disables)")
	f.StringVar(&healthAddress, "health-probe-bind-address", ":8384", "address of /healthz and /readyz (\"0\" disables)")
	f.StringVar(&endpointHost, "endpoint-host", "127.0.0.1", "address clients and nodes use to reach hosted API servers")
	f.BoolVar(&installAPI, "install-crds", true, "install or upgrade the hypershift.dev CRDs at start")
	return cmd
}
