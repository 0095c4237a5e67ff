// Package entrypoint holds the hypershift commands that run a process on
// this host: the management plane and its operator (`up`, and `down`,
// which stops what `up` started; `operator`), the node agents (`join`,
// `node`, `machine`), the dashboard server (`dashboard`, which serves
// until interrupted), and the commands the runtimes run as child processes
// of hypershift, not people: `hypershift component NAME` (a control-plane
// component of the binary's table) and `hypershift restore etcd-data` (the
// restore step before an etcd member first starts). cmd/hypershift adds
// them to the command line of internal/cli, which holds the commands that
// act on the management plane's API and on local files, as Kubernetes
// keeps each server's command beside its server and kubectl apart.
package entrypoint

import (
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/components"
)

// Add adds the entry points to root, the hypershift command whose shared
// flags (--kubeconfig, --data-dir) fill m: up, down, operator, join, node,
// machine, dashboard, component (running registry's components) and, under
// its restore command, etcd-data. It takes pflag's global flag set away
// from the command line (see componentFlags), so it is called before root
// runs.
func Add(root *cobra.Command, m *clusterclient.Management, registry components.Registry) {
	componentFlags()
	root.AddCommand(
		newUpCommand(m),
		newDownCommand(m),
		newOperatorCommand(m),
		newJoinCommand(),
		newNodeCommand(),
		newMachineCommand(),
		newDashboardCommand(m),
		newComponentCommand(registry),
	)
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
