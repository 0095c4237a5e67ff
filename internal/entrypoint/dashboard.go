package entrypoint

import (
	"fmt"
	"net"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/dashboard"
)

// newDashboardCommand is `hypershift dashboard`: the fleet as a web page.
func newDashboardCommand(g *clusterclient.Management) *cobra.Command {
	var address string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live web view of the hosted clusters (loopback by default)",
		Long: "Serve a web page of the fleet — every hosted cluster's version, conditions, nodes, " +
			"components, NodePools, events and charts of the last hour — with the authority of the management " +
			"kubeconfig, and make from it the changes of the command line (create a cluster, scale a NodePool, " +
			"hibernate and resume, upgrade, rotate CA) with that same authority. It answers only requests that " +
			"carry the random token of the URL it prints (a cookie once opened); whoever has that URL may read and " +
			"change what the kubeconfig may (never Secret values are shown).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return fmt.Errorf("--address %s: want HOST:PORT: %w", address, err)
			}
			ip := net.ParseIP(host)
			if ip == nil {
				return fmt.Errorf("--address %s: the host must be an IP address (the dashboard checks requests are addressed to it)", address)
			}
			if every < time.Second {
				return fmt.Errorf("--sample-interval %s: use at least 1s", every)
			}
			cfg, err := g.RESTConfig()
			if err != nil {
				return err
			}
			srv, err := dashboard.New(dashboard.Options{Config: cfg, SampleEvery: every, Log: zap.New(zap.WriteTo(cmd.ErrOrStderr()))})
			if err != nil {
				return err
			}
			l, err := net.Listen("tcp", address)
			if err != nil {
				return fmt.Errorf("--address %s: %w", address, err)
			}
			if !ip.IsLoopback() {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s is not a loopback address: whoever reaches it reads the fleet with this kubeconfig's authority\n", address)
			}
			// The token is the dashboard's only credential: other users of
			// this machine reach a loopback port too.
			fmt.Fprintf(cmd.OutOrStdout(), "dashboard at http://%s/?token=%s\n", l.Addr(), srv.Token())
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return srv.Serve(ctx, l)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:8080", "IP:PORT to serve on (port 0 picks a free one)")
	cmd.Flags().DurationVar(&every, "sample-interval", 15*time.Second, "how often the charts get a point")
	return cmd
}
