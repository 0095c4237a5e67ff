package join

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"hypershift.dev/internal/nodes/cloudmeta"
)

// Options say how a host joins: the cluster's API server, the bootstrap
// token and the pinned CA hash of a join command, and the node's own
// settings. Its checks name the flags of `hypershift join`.
type Options struct {
	Server, Token, CAHash string
	NodeDir, NodeName     string
	NodeIP, CNIBinDir     string
	ProviderID            string
	// VolumesDir is where the machine has its attached volumes (a pod
	// machine's hot-plug directory); set, the node runs the CSI plugin.
	VolumesDir        string
	KubeletPort       int
	KubernetesVersion string
	// ProviderIDFrom (aws, azure, kubevirt; empty: none) is where the
	// Node's name and provider ID come from instead of NodeName and
	// ProviderID: what the machine's provider reports (cloudmeta).
	ProviderIDFrom string
	// Metadata looks them up; its zero value asks the real metadata
	// services.
	Metadata cloudmeta.Client
	// Timeout bounds the wait for the node to be Ready.
	Timeout time.Duration
}

// Join makes this host a node of the cluster opts name: it checks the
// options and the host's state, finds the cluster with the token and the
// pinned CA hash (nothing is written before), prepares the node directory,
// fetches the release, starts the node daemon (`hypershift node run`, in a
// session of its own) and waits until the Node is Ready. Each step is said
// on progress.
func Join(ctx context.Context, opts Options, progress io.Writer) error {
	start := time.Now()
	if err := opts.check(); err != nil {
		return err
	}
	if n, joined, err := Load(opts.NodeDir); err != nil {
		return err
	} else if joined {
		return fmt.Errorf("this host already joined %s as node %s (%s): undo it with `hypershift join --reset --node-dir %s`", n.Cluster, n.Name, opts.NodeDir, opts.NodeDir)
	}
	if err := machineIdentity(ctx, &opts, progress); err != nil {
		return err
	}
	cluster, err := Discover(ctx, opts.Server, opts.Token, opts.CAHash)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("hypershift join must run as root: it starts containerd and the kubelet")
	}
	if opts.NodeDir, err = Preflight(opts.NodeDir, opts.KubeletPort); err != nil {
		return err
	}
	prereq, err := CheckHost(opts.CNIBinDir)
	if err != nil {
		return err
	}
	n, err := NewNode(cluster, prereq, NodeOptions{Name: opts.NodeName, IP: opts.NodeIP, DataDir: opts.NodeDir, KubeletPort: opts.KubeletPort, ProviderID: opts.ProviderID, VolumesDir: opts.VolumesDir})
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "joining hosted cluster %s (NodePool %s) as node %s (%s)\n", cluster.Name, cluster.NodePool, n.Name, n.NodeIP)
	if err := Prepare(ctx, n, cluster); err != nil {
		return err
	}
	// The release is fetched with the token before the kubelet starts.
	if err := n.EnsureRelease(ctx, n.BootstrapKubeconfigPath(), opts.KubernetesVersion); err != nil {
		return fmt.Errorf("%w\nundo with `hypershift join --reset --node-dir %s`", err, opts.NodeDir)
	}
	if err := n.Save(); err != nil {
		return err
	}
	fmt.Fprintf(progress, "kubelet and kube-proxy of Kubernetes %s\n", n.RunningVersion())
	// `node run` outlives this command, in its own session.
	daemon, err := StartDaemon(opts.NodeDir)
	if err != nil {
		return fmt.Errorf("start the node daemon: %w", err)
	}
	if err := WaitReady(ctx, n, daemon, opts.Timeout); err != nil {
		return fmt.Errorf("%w\nundo with `hypershift join --reset --node-dir %s`", err, opts.NodeDir)
	}
	fmt.Fprintf(progress, "node %s is Ready (%.1fs)\n  logs: %s, %s\n  load images: hypershift node load-image FILE.tar --node-dir %s\n  undo: hypershift join --reset --node-dir %s\n",
		n.Name, time.Since(start).Seconds(), n.LogPath(Kubelet), n.LogPath(Containerd), opts.NodeDir, opts.NodeDir)
	return nil
}

// check refuses options a join cannot run with, before anything is asked
// or made.
func (opts Options) check() error {
	if opts.Server == "" || opts.Token == "" || opts.CAHash == "" {
		return errors.New("--server, --token (or --token-file) and --ca-cert-hash are required: print them with `hypershift create join-command --name CLUSTER`")
	}
	if err := CheckKubeletPort(opts.KubeletPort); err != nil {
		return err
	}
	if err := CheckKubernetesVersion(opts.KubernetesVersion); err != nil {
		return err
	}
	if err := CheckProviderID(opts.ProviderID); err != nil {
		return err
	}
	if err := checkVolumesDir(opts.VolumesDir); err != nil {
		return err
	}
	return CheckProviderIDFrom(opts)
}

// checkVolumesDir refuses a volumes directory that is not an absolute
// path of an existing directory (empty: none).
func checkVolumesDir(dir string) error {
	if dir == "" {
		return nil
	}
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("--volumes-dir %s must be an absolute path", dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("--volumes-dir %s is not a directory: it is where the machine has its attached volumes", dir)
	}
	return nil
}
