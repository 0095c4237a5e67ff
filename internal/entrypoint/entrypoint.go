// Package entrypoint holds the commands the runtimes run as child processes
// of hypershift, not people: `hypershift component NAME` (a control-plane
// component of the binary's table) and `hypershift restore etcd-data` (the
// restore step before an etcd member first starts). cmd/hypershift adds
// them to the command line of internal/cli, as Kubernetes keeps each
// server's command beside its server.
package entrypoint

import (
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"hypershift.dev/internal/components"
)

// Add adds the entry points to root, the hypershift command: component
// (running registry's components) and, under its restore command, etcd-data.
// It takes pflag's global flag set away from the command line (see
// componentFlags), so it is called before root runs.
func Add(root *cobra.Command, registry components.Registry) {
	componentFlags()
	root.AddCommand(newComponentCommand(registry))
	for _, c := range root.Commands() {
		if c.Name() == "restore" {
			c.AddCommand(newRestoreEtcdDataCommand())
		}
	}
}

// componentFlags takes pflag's global flag set away from the command line
// once and returns it. The compiled-in components register flags there at
// init (component-base's --version), and cobra would show and accept them
// on every hypershift command; they belong to `hypershift component` only,
// which puts the set back before it runs one.
var componentFlags = sync.OnceValue(func() *pflag.FlagSet {
	global := pflag.CommandLine
	pflag.CommandLine = pflag.NewFlagSet(global.Name(), pflag.ExitOnError)
	return global
})
