package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/version"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hypershift's version and the Kubernetes version it hosts",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "hypershift %s\nkubernetes %s\n", version.Version, version.KubernetesVersion)
		},
	}
}
