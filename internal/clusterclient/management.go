package clusterclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/scheme"
)

// Management is how every hypershift command finds the management plane:
// the flags they all share, --kubeconfig and --data-dir. The client
// commands (internal/cli) and those that run a process on this host
// (internal/entrypoint) read the same values.
type Management struct {
	// Kubeconfig is --kubeconfig; empty means $KUBECONFIG, then the data
	// dir's management.kubeconfig.
	Kubeconfig string
	// DataDir is --data-dir, absolute once Complete ran.
	DataDir string
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

// ErrNoManagementPlane says what to do when no management cluster is known.
var ErrNoManagementPlane = errors.New("no management plane found: run `hypershift up` or pass --kubeconfig")

// AddFlags adds --kubeconfig and --data-dir to f (the root command's
// persistent flags).
func (m *Management) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&m.Kubeconfig, "kubeconfig", "", "kubeconfig of the management cluster (default: $KUBECONFIG, then DATA_DIR/management.kubeconfig)")
	f.StringVar(&m.DataDir, "data-dir", DefaultDataDir(), "data directory of the embedded management plane ($HYPERSHIFT_DATA_DIR)")
}

// Complete makes the data dir absolute once the flags are parsed, so that
// every command and every process it starts sees the same data dir,
// whatever their working directory.
func (m *Management) Complete() error {
	abs, err := filepath.Abs(m.DataDir)
	if err != nil {
		return fmt.Errorf("--data-dir %s: %w", m.DataDir, err)
	}
	m.DataDir = abs
	return nil
}

// KubeconfigPath finds the management cluster: --kubeconfig, $KUBECONFIG,
// then the data dir's management.kubeconfig.
func (m *Management) KubeconfigPath() (string, error) {
	if m.Kubeconfig != "" {
		return m.Kubeconfig, nil
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return env, nil
	}
	path := m.Layout().ManagementKubeconfig()
	if _, err := os.Stat(path); err != nil {
		return "", ErrNoManagementPlane
	}
	return path, nil
}

// Layout is the data dir of --data-dir.
func (m *Management) Layout() datadir.Layout { return datadir.Layout{Root: m.DataDir} }

// RESTConfig is the client configuration of the management cluster's
// kubeconfig (KubeconfigPath).
func (m *Management) RESTConfig() (*rest.Config, error) {
	path, err := m.KubeconfigPath()
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

// Client is a client of the management cluster with hypershift's scheme.
func (m *Management) Client() (client.Client, error) {
	cfg, err := m.RESTConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connect to the management plane: %w", err)
	}
	return c, nil
}

// LocalProcessRoot is where this host's management plane keeps its control
// planes' files, when the management cluster in use is the data dir's own
// (`up`); empty otherwise — another management plane's files are not
// this one's.
func (m *Management) LocalProcessRoot() string {
	path, err := m.KubeconfigPath()
	if err != nil || !m.Layout().IsDataDir() {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil || abs != m.Layout().ManagementKubeconfig() {
		return ""
	}
	return m.Layout().Clusters()
}
