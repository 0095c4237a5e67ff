// Package cli holds the hypershift commands that act on the management
// plane's API and on local files: create, get, describe, destroy,
// hibernate and resume, rotate, backup, restore, migrate, dump, install and
// uninstall, image and version. Each reads its flags, calls the package
// that does the work and prints the result. The commands that run a
// process on this host (up, operator, join, …) are internal/entrypoint's.
package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"hypershift.dev/internal/clusterclient"
)

// NewRootCommand returns the hypershift command line of the commands that
// act on the management plane's API and on local files, and the options
// every command shares (--kubeconfig, --data-dir). The commands that run a
// process on this host (internal/entrypoint) are added to it, with those
// options, by cmd/hypershift.
func NewRootCommand() (*cobra.Command, *clusterclient.Management) {
	opts := &clusterclient.Management{}
	root := &cobra.Command{
		Use:           "hypershift",
		Short:         "Hosted Kubernetes control planes",
		Long:          "hypershift runs the control planes of many Kubernetes clusters on one management plane.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every command and every process it starts sees the same data
		// dir, whatever their working directory.
		PersistentPreRunE: func(*cobra.Command, []string) error { return opts.Complete() },
	}
	opts.AddFlags(root.PersistentFlags())
	root.AddCommand(
		newVersionCommand(),
		newCreateCommand(opts),
		newGetCommand(opts),
		newDescribeCommand(opts),
		newDumpCommand(opts),
		newDestroyCommand(opts),
		newHibernateCommand(opts, false),
		newHibernateCommand(opts, true),
		newRotateCommand(opts),
		newImageCommand(),
		newInstallCommand(opts),
		newUninstallCommand(opts),
		newBackupCommand(opts),
		newRestoreCommand(opts),
		newMigrateCommand(opts),
	)
	addNodePoolCommands(root, opts)
	return root, opts
}

// Execute runs root, the command line, and prints errors plainly.
func Execute(root *cobra.Command) int {
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "Error: "+describeError(err))
		return 1
	}
	return 0
}

// describeError turns API errors into their server message, which names the
// field at fault, without Go's wrapping noise.
func describeError(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
