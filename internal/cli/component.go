package cli

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// ownComponents are components implemented by hypershift itself (not
// compiled in from Kubernetes), run by the runtimes like any other:
// `hypershift component <name> <flags>`. Each file that implements one
// registers it in an init function.
var ownComponents = map[string]func(ctx context.Context, args []string) error{}

func registerComponent(name string, run func(ctx context.Context, args []string) error) {
	ownComponents[name] = run
}

func newComponentCommand(run ComponentRunner) *cobra.Command {
	return &cobra.Command{
		Use:   "component NAME [flags]",
		Short: "Run a control-plane component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, …)",
		Long: "Run a control-plane component: a Kubernetes component compiled into this binary, with its upstream\n" +
			"flags, or one of hypershift's own (" + strings.Join(ownComponentNames(), ", ") + ").\n" +
			"Example: hypershift component kube-apiserver --help",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			// The components find their global flags (--version) here.
			cliFlags := pflag.CommandLine
			pflag.CommandLine = componentFlags()
			defer func() { pflag.CommandLine = cliFlags }()
			if own, ok := ownComponents[args[0]]; ok {
				return own(cmd.Context(), args[1:])
			}
			if run == nil {
				return errors.New("this binary has no compiled-in components")
			}
			return run(cmd.Context(), args[0], args[1:])
		},
	}
}

func ownComponentNames() []string {
	names := make([]string, 0, len(ownComponents))
	for n := range ownComponents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
