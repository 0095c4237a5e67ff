package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/install"
)

func newUninstallCommand(g *clusterclient.Management) *cobra.Command {
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove what `hypershift install` made",
		Long: "Remove the operator, its RBAC and namespace, the admission policies and the hypershift.dev CRDs\n" +
			"(everything labelled app.kubernetes.io/managed-by=hypershift-install), CRDs last.\n" +
			"Refuses while HostedClusters exist: destroy them first.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.Client()
			if err != nil {
				return err
			}
			return install.Uninstall(cmd.Context(), c, wait, timeout, func(kind, key string) {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s deleted\n", kind, key)
			})
		},
	}
	f := cmd.Flags()
	f.BoolVar(&wait, "wait", true, "wait until everything is gone")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait: how long to wait")
	return cmd
}
