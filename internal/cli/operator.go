package cli

import (
	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/operator"
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
		RunE: func(_ *cobra.Command, _ []string) error {
			log := zap.New()
			ctrl.SetLogger(log)
			cfg, err := g.restConfig()
			if err != nil {
				return err
			}
			return operator.Run(ctrl.SetupSignalHandler(), g.layout(), operator.Options{
				RESTConfig:         cfg,
				MetricsBindAddress: metricsAddress, HealthProbeBindAddress: healthAddress,
				EndpointHost: endpointHost,
			}, installAPI, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&metricsAddress, "metrics-bind-address", "127.0.0.1:8383", "address of Prometheus metrics (\"0\" disables)")
	f.StringVar(&healthAddress, "health-probe-bind-address", "127.0.0.1:8384", "address of /healthz and /readyz (\"0\" disables)")
	f.StringVar(&endpointHost, "endpoint-host", "127.0.0.1", "address clients and nodes use to reach hosted API servers")
	f.BoolVar(&installAPI, "install-crds", true, "install or upgrade the hypershift.dev CRDs at start")
	return cmd
}
