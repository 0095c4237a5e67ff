package entrypoint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/pki"
)

// newComponentCommand runs a component of registry, the binary's one table
// of components (built by main), as the runtimes start them:
// `hypershift component <name> <flags>`.
func newComponentCommand(registry components.Registry) *cobra.Command {
	own := "none in this build"
	if names := registry.Names(true); len(names) > 0 {
		own = strings.Join(names, ", ")
	}
	return &cobra.Command{
		Use:   "component NAME [flags]",
		Short: "Run a control-plane component (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, …)",
		Long: "Run a control-plane component: a Kubernetes component compiled into this binary, with its upstream\n" +
			"flags, or one of hypershift's own (" + own + ").\n" +
			"Example: hypershift component kube-apiserver --help",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
				return cmd.Help()
			}
			if err := registry.Validate(); err != nil {
				return err
			}
			if err := pki.ClientCertReloadFromEnv(); err != nil {
				return err
			}
			c, ok := registry.Lookup(args[0])
			if !ok {
				if len(registry.Names(false)) == 0 {
					return errors.New("this binary has no compiled-in components")
				}
				return fmt.Errorf("unknown component %q: this binary runs %s", args[0],
					strings.Join(append(registry.Names(false), registry.Names(true)...), ", "))
			}
			// The components find their global flags (--version) here.
			cliFlags := pflag.CommandLine
			pflag.CommandLine = componentFlags()
			defer func() { pflag.CommandLine = cliFlags }()
			return c.Main(cmd.Context(), args[1:])
		},
	}
}
