package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"hypershift.dev/internal/runtime/process"
)

func newDownCommand(g *globalOptions) *cobra.Command {
	var purge bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the embedded management plane and every hosted control plane",
		Long:  "Stop the management plane and every hosted control plane of the data dir. Data is kept for the next `up` unless --purge.",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := &upOptions{globalOptions: g}
			if _, err := os.Stat(g.dataDir); err != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing to stop: no data dir %s\n", g.dataDir)
				return nil
			}
			if pid, start, ok := process.LivePID(o.pidPath()); ok {
				fmt.Fprintf(cmd.OutOrStdout(), "stopping management plane (pid %d)\n", pid)
				if err := process.Terminate(pid, start, 2*time.Minute); err != nil {
					return err
				}
			}
			// Whatever an earlier `up` left running without supervision.
			process.StopOrphans(g.dataDir, logr.Discard())
			_ = process.RemovePIDFile(o.pidPath())
			if purge {
				if err := os.RemoveAll(g.dataDir); err != nil {
					return fmt.Errorf("purge %s: %w", g.dataDir, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", g.dataDir)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped; data kept in %s (`hypershift up` resumes, `down --purge` removes it)\n", g.dataDir)
			return nil
		},
	}
	cmd.Flags().BoolVar(&purge, "purge", false, "also remove the data dir")
	return cmd
}
