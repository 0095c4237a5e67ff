package entrypoint

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/operator"
)

func newDownCommand(g *clusterclient.Management) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the embedded management plane and every hosted control plane",
		Long:  "Stop the management plane and every hosted control plane of the data dir. Data is kept for the next `up` unless --purge.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			layout := g.Layout()
			if _, err := os.Stat(layout.Root); err != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing to stop: no data dir %s\n", layout.Root)
				return nil
			}
			err := operator.Down(layout, purge, func(pid int) {
				fmt.Fprintf(cmd.OutOrStdout(), "stopping management plane (pid %d)\n", pid)
			})
			switch {
			case err != nil:
				return err
			case purge:
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", layout.Root)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "stopped; data kept in %s (`hypershift up` resumes, `down --purge` removes it)\n", layout.Root)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also remove the data dir")
	return cmd
}
