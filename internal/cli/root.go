// Package cli implements the hypershift command line.
package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/scheme"
)

// globalOptions are the flags every command shares.
type globalOptions struct {
	kubeconfig string
	dataDir    string
}

// DefaultDataDir is ~/.hypershift, or $HYPERSHIFT_DATA_DIR.
func DefaultDataDir() string {
	if d := os.Getenv("HYPERSHIFT_DATA_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".hypershift"
	}
	return filepath.Join(home, ".hypershift")
}

// errNoManagementPlane says what to do when no management cluster is known.
var errNoManagementPlane = errors.New("no management plane found: run `hypershift up` or pass --kubeconfig")

// kubeconfigPath finds the management cluster: --kubeconfig, $KUBECONFIG,
// then the data dir's management.kubeconfig.
func (o *globalOptions) kubeconfigPath() (string, error) {
	if o.kubeconfig != "" {
		return o.kubeconfig, nil
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return env, nil
	}
	path := o.layout().ManagementKubeconfig()
	if _, err := os.Stat(path); err != nil {
		return "", errNoManagementPlane
	}
	return path, nil
}

// layout is the data dir of --data-dir.
func (o *globalOptions) layout() datadir.Layout { return datadir.Layout{Root: o.dataDir} }

func (o *globalOptions) restConfig() (*rest.Config, error) {
	path, err := o.kubeconfigPath()
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

func (o *globalOptions) client() (client.Client, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connect to the management plane: %w", err)
	}
	return c, nil
}

// NewRootCommand returns the hypershift command line. The entry points the
// runtimes run (internal/entrypoint) are added to it by cmd/hypershift.
func NewRootCommand() *cobra.Command {
	opts := &globalOptions{}
	root := &cobra.Command{
		Use:           "hypershift",
		Short:         "Hosted Kubernetes control planes",
		Long:          "hypershift runs the control planes of many Kubernetes clusters on one management plane.",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Every command and every process it starts sees the same data
		// dir, whatever their working directory.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			abs, err := filepath.Abs(opts.dataDir)
			if err != nil {
				return fmt.Errorf("--data-dir %s: %w", opts.dataDir, err)
			}
			opts.dataDir = abs
			return nil
		},
	}
	root.PersistentFlags().StringVar(&opts.kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster (default: $KUBECONFIG, then DATA_DIR/management.kubeconfig)")
	root.PersistentFlags().StringVar(&opts.dataDir, "data-dir", DefaultDataDir(), "data directory of the embedded management plane ($HYPERSHIFT_DATA_DIR)")
	root.AddCommand(
		newVersionCommand(),
		newUpCommand(opts),
		newDownCommand(opts),
		newOperatorCommand(opts),
		newCreateCommand(opts),
		newGetCommand(opts),
		newDescribeCommand(opts),
		newDumpCommand(opts),
		newDashboardCommand(opts),
		newDestroyCommand(opts),
		newHibernateCommand(opts, false),
		newHibernateCommand(opts, true),
		newRotateCommand(opts),
		newJoinCommand(),
		newNodeCommand(),
		newMachineCommand(),
		newImageCommand(),
		newInstallCommand(opts),
		newUninstallCommand(opts),
		newBackupCommand(opts),
		newRestoreCommand(opts),
		newMigrateCommand(opts),
	)
	addNodePoolCommands(root, opts)
	return root
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
