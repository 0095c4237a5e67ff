package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"hypershift.dev/internal/managementplane"
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
			// Only a data dir: its pid files name processes to stop, and
			// --purge removes everything in it.
			if !managementplane.IsDataDir(g.dataDir) {
				return fmt.Errorf("--data-dir %s is not a hypershift data dir (no %s, no management plane layout): nothing stopped or removed",
					g.dataDir, managementplane.MarkerFile)
			}
			if pid, start, ok := process.LivePID(o.pidPath()); ok {
				fmt.Fprintf(cmd.OutOrStdout(), "stopping management plane (pid %d)\n", pid)
				if err := process.Terminate(pid, start, 2*time.Minute); err != nil {
					return err
				}
			}
			// Held while stopping and purging, so that no `up` or
			// `operator` starts meanwhile, and none still runs.
			lock, err := managementplane.LockDataDir(g.dataDir)
			if err != nil {
				return err
			}
			defer lock.Unlock()
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
