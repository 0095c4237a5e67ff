package entrypoint

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/nodes/join"
)

// newNodeCommand groups the commands run on a joined node.
func newNodeCommand() *cobra.Command {
	var nodeDir string
	cmd := &cobra.Command{Use: "node", Short: "Commands for a joined node (run as root on the node)"}
	cmd.PersistentFlags().StringVar(&nodeDir, "node-dir", join.DefaultDataDir, "directory of the joined node")
	run := &cobra.Command{
		Use:   "run",
		Short: "Supervise the node's containerd, kubelet, kube-proxy and API server proxy (started by `hypershift join`; run it from a service manager to restart it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			n, prereq, err := joinedNode(nodeDir)
			if err != nil {
				return err
			}
			if pid, ok := join.DaemonPID(nodeDir); ok && pid != os.Getpid() {
				return fmt.Errorf("the node daemon already runs (pid %d)", pid)
			}
			if err := join.RecordDaemon(nodeDir); err != nil {
				return err
			}
			if err := join.EnsureCgroupRoot(n); err != nil { // gone after a reboot
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return join.Run(ctx, n, prereq.Ctr, zap.New())
		},
	}
	load := &cobra.Command{
		Use:     "load-image FILE.tar",
		Short:   "Import an image tarball (docker-archive or OCI) into the node's containerd, no registry needed",
		Example: "  hypershift node load-image hello.tar\n  then run it with imagePullPolicy: Never (or IfNotPresent with a fixed tag)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, prereq, err := joinedNode(nodeDir)
			if err != nil {
				return err
			}
			if err := join.LoadImage(cmd.Context(), n, prereq.Ctr, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %s into node %s\n", args[0], n.Name)
			return nil
		},
	}
	cmd.AddCommand(run, load)
	return cmd
}

// joinedNode loads the node under nodeDir and finds the host programs it
// runs.
func joinedNode(nodeDir string) (*join.Node, join.Prerequisites, error) {
	n, joined, err := join.Load(nodeDir)
	if err != nil {
		return nil, join.Prerequisites{}, err
	}
	if !joined {
		return nil, join.Prerequisites{}, fmt.Errorf("no node under %s: join one with `hypershift join …` (or pass --node-dir)", nodeDir)
	}
	prereq, err := join.CheckHost(n.CNIBinDir)
	return n, prereq, err
}
