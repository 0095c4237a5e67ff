package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func newComponentCommand(run ComponentRunner) *cobra.Command {
	return &cobra.Command{
		Use:   "component NAME [upstream flags]",
		Short: "Run a compiled-in control-plane component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)",
		Long: "Run a Kubernetes control-plane component compiled into this binary, with its upstream flags.\n" +
			"Example: hypershift component kube-apiserver --help",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			if run == nil {
				return errors.New("this binary has no compiled-in components")
			}
			return run(cmd.Context(), args[0], args[1:])
		},
	}
}
