package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/nodes/machine"
)

type joinOptions struct {
	server, token, caHash string
	tokenFile             string
	nodeDir, nodeName     string
	nodeIP, cniBinDir     string
	providerID            string
	kubeletPort           int
	kubernetesVersion     string
	timeout               time.Duration
	reset                 bool
}

func newJoinCommand() *cobra.Command {
	o := &joinOptions{}
	cmd := &cobra.Command{
		Use:   "join --server URL --token-file FILE|--token ID.SECRET --ca-cert-hash sha256:HASH",
		Short: "Make this Linux host a node of a hosted cluster (run as root), or undo it with --reset",
		Long: "join checks the command against the cluster (CA hash, token), then starts a private containerd and the\n" +
			"kubelet under --node-dir (compiled into hypershift, or with --kubernetes-version another release fetched\n" +
			"from the control plane); the kubelet bootstraps its certificates with the token and the node joins the\n" +
			"token's NodePool. Print a join command with `hypershift create join-command`.\n" +
			"Needs Debian's containerd, runc, containernetworking-plugins and iptables.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.reset {
				return o.runReset(cmd)
			}
			return o.run(cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "URL of the hosted cluster's API server")
	f.StringVar(&o.token, "token", "", "bootstrap token of a NodePool (visible to other users of this host in the process list while join runs: prefer --token-file)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the bootstrap token, or - to read it from standard input")
	f.StringVar(&o.caHash, "ca-cert-hash", "", "hash of the cluster CA's public key, sha256:<hex>")
	f.StringVar(&o.nodeDir, "node-dir", join.DefaultDataDir, "directory for everything the node keeps")
	f.StringVar(&o.nodeName, "node-name", "", "name of the Node (default: the host name)")
	f.StringVar(&o.nodeIP, "node-ip", "", "address the API server reaches the kubelet on (default: the host's first global IPv4)")
	f.StringVar(&o.providerID, "provider-id", os.Getenv(machine.ProviderIDEnv), "the Node's spec.providerID, PROVIDER://ID as the machine's provider names it (default: $"+machine.ProviderIDEnv+", set in a machine's userdata)")
	f.StringVar(&o.cniBinDir, "cni-bin-dir", join.DefaultCNIBinDir, "directory of the CNI plugins")
	f.IntVar(&o.kubeletPort, "kubelet-port", join.DefaultKubeletPort, "port the kubelet serves on (the API server reaches it there for logs and exec)")
	f.StringVar(&o.kubernetesVersion, "kubernetes-version", "", "Kubernetes version of the kubelet and kube-proxy, fetched from the control plane's release server when it is not the one compiled into hypershift (default: the compiled-in one; `create join-command` prints the pool's)")
	f.DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long to wait for the node to be Ready")
	f.BoolVar(&o.reset, "reset", false, "stop the node and remove everything a join made on this host")
	return cmd
}

func (o *joinOptions) run(cmd *cobra.Command) error {
	start := time.Now()
	if err := o.readToken(cmd.InOrStdin()); err != nil {
		return err
	}
	if o.server == "" || o.token == "" || o.caHash == "" {
		return errors.New("--server, --token (or --token-file) and --ca-cert-hash are required: print them with `hypershift create join-command --name CLUSTER`")
	}
	if err := join.CheckKubeletPort(o.kubeletPort); err != nil {
		return err
	}
	if err := join.CheckKubernetesVersion(o.kubernetesVersion); err != nil {
		return err
	}
	if err := join.CheckProviderID(o.providerID); err != nil {
		return err
	}
	if n, joined, err := join.Load(o.nodeDir); err != nil {
		return err
	} else if joined {
		return fmt.Errorf("this host already joined %s as node %s (%s): undo it with `hypershift join --reset --node-dir %s`", n.Cluster, n.Name, o.nodeDir, o.nodeDir)
	}
	ctx := cmd.Context()
	cluster, err := join.Discover(ctx, o.server, o.token, o.caHash)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("hypershift join must run as root: it starts containerd and the kubelet")
	}
	if o.nodeDir, err = join.Preflight(o.nodeDir, o.kubeletPort); err != nil {
		return err
	}
	prereq, err := join.CheckHost(o.cniBinDir)
	if err != nil {
		return err
	}
	n, err := join.NewNode(cluster, prereq, join.NodeOptions{Name: o.nodeName, IP: o.nodeIP, DataDir: o.nodeDir, KubeletPort: o.kubeletPort, ProviderID: o.providerID})
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "joining hosted cluster %s (NodePool %s) as node %s (%s)\n", cluster.Name, cluster.NodePool, n.Name, n.NodeIP)
	if err := join.Prepare(ctx, n, cluster); err != nil {
		return err
	}
	// The release is fetched with the token before the kubelet starts.
	if err := n.EnsureRelease(ctx, n.BootstrapKubeconfigPath(), o.kubernetesVersion); err != nil {
		return fmt.Errorf("%w\nundo with `hypershift join --reset --node-dir %s`", err, o.nodeDir)
	}
	if err := n.Save(); err != nil {
		return err
	}
	fmt.Fprintf(out, "kubelet and kube-proxy of Kubernetes %s\n", n.RunningVersion())
	// `node run` outlives this command, in its own session.
	daemon, err := join.StartDaemon(o.nodeDir)
	if err != nil {
		return fmt.Errorf("start the node daemon: %w", err)
	}
	if err := join.WaitReady(ctx, n, daemon, o.timeout); err != nil {
		return fmt.Errorf("%w\nundo with `hypershift join --reset --node-dir %s`", err, o.nodeDir)
	}
	fmt.Fprintf(out, "node %s is Ready (%.1fs)\n  logs: %s, %s\n  load images: hypershift node load-image FILE.tar --node-dir %s\n  undo: hypershift join --reset --node-dir %s\n",
		n.Name, time.Since(start).Seconds(), n.LogPath(join.Kubelet), n.LogPath(join.Containerd), o.nodeDir, o.nodeDir)
	return nil
}

// readToken takes the token from --token-file (a file, or - for standard
// input), which keeps it out of the process list, unlike --token.
func (o *joinOptions) readToken(stdin io.Reader) error {
	if o.tokenFile == "" {
		return nil
	}
	if o.token != "" {
		return errors.New("--token and --token-file both given: pass one")
	}
	var data []byte
	var err error
	if o.tokenFile == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, 1024))
	} else {
		data, err = os.ReadFile(o.tokenFile)
	}
	if err != nil {
		return fmt.Errorf("--token-file %s: %w", o.tokenFile, err)
	}
	o.token = strings.TrimSpace(string(data))
	if o.token == "" {
		return fmt.Errorf("--token-file %s is empty: it must hold the token ID.SECRET printed by `hypershift create join-command`", o.tokenFile)
	}
	return nil
}

func (o *joinOptions) runReset(cmd *cobra.Command) error {
	n, joined, err := join.Load(o.nodeDir)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !joined {
		fmt.Fprintf(out, "nothing to reset: no node under %s\n", o.nodeDir)
		return nil
	}
	if os.Geteuid() != 0 {
		return errors.New("hypershift join --reset must run as root")
	}
	// The Node object stays: a kubelet may not delete its own Node, and
	// kubeadm reset leaves it too.
	if err := join.Reset(cmd.Context(), n, logr.Discard()); err != nil {
		return fmt.Errorf("reset left something behind: %w", err)
	}
	fmt.Fprintf(out, "node %s stopped; removed its containers, network, cgroups and %s\n", n.Name, o.nodeDir)
	fmt.Fprintf(out, "its Node object stays in %s until you delete it: kubectl delete node %s\n", n.Cluster, n.Name)
	return nil
}

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

func newCreateJoinCommandCommand(g *globalOptions) *cobra.Command {
	var name, namespace, pool string
	var tok tokenOptions
	cmd := &cobra.Command{
		Use:   "join-command --name CLUSTER",
		Short: "Print the command that joins a host to a hosted cluster's NodePool of platform None, with a fresh token",
		Long: "join-command makes a bootstrap token for the NodePool and prints the `hypershift join` line that uses it\n" +
			"(on standard output; a hint on standard error). The token lets anyone who has it add a node to the pool\n" +
			"until it expires (--ttl, at most " + bootstrap.MaxTTL.String() + "); with --single-use it is deleted once one node used it.\n" +
			"On the node, prefer --token-file over --token: a token on the command line is visible to other local users.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return errors.New("--name is required: `hypershift create join-command --name CLUSTER`")
			}
			if err := tok.check(); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			line, err := joinCommandWith(cmd.Context(), c, client.ObjectKey{Namespace: namespace, Name: name}, pool, tok)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), line)
			fmt.Fprintln(cmd.ErrOrStderr(), "to keep the token out of the node's process list, save it in a file (or pipe it) and use --token-file FILE (or --token-file -) instead of --token")
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the hosted cluster (required)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	cmd.Flags().StringVar(&pool, "nodepool", "", "NodePool to join (default: the cluster's only NodePool of platform None)")
	cmd.Flags().DurationVar(&tok.ttl, "ttl", time.Hour, "how long the token may be used to join, at most "+bootstrap.MaxTTL.String())
	cmd.Flags().BoolVar(&tok.singleUse, "single-use", false, "delete the token once one node got its client certificate with it")
	return cmd
}

// tokenOptions are how a join command's token is made.
type tokenOptions struct {
	ttl       time.Duration
	singleUse bool
}

// check refuses a lifetime outside [1s, bootstrap.MaxTTL].
func (o tokenOptions) check() error {
	if o.ttl < time.Second {
		return fmt.Errorf("--ttl %s is too short: tokens live at least 1s", o.ttl)
	}
	if o.ttl > bootstrap.MaxTTL {
		return fmt.Errorf("--ttl %s is longer than the %s a join token may live: pass --ttl %s or less, and print a new join command when it expires", o.ttl, bootstrap.MaxTTL, bootstrap.MaxTTL)
	}
	return nil
}

// joinCommand makes a token for a None pool of the cluster and returns the
// `hypershift join` line that uses it.
func joinCommand(ctx context.Context, c client.Client, key client.ObjectKey, pool string, ttl time.Duration) (string, error) {
	return joinCommandWith(ctx, c, key, pool, tokenOptions{ttl: ttl})
}

func joinCommandWith(ctx context.Context, c client.Client, key client.ObjectKey, pool string, opts tokenOptions) (string, error) {
	if err := opts.check(); err != nil {
		return "", err
	}
	np, err := nonePool(ctx, c, key, pool)
	if err != nil {
		return "", err
	}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := c.Get(ctx, key, hc); err != nil {
		return "", fmt.Errorf("hosted cluster %s: %w", key, err)
	}
	kc, err := connectKubeconfig(ctx, c, hc)
	if err != nil {
		return "", err
	}
	network, err := bootstrap.NetworkOf(hc.Spec.Networking)
	if err != nil {
		return "", fmt.Errorf("hosted cluster %s: %w", key, err)
	}
	line, err := bootstrap.JoinCommand(ctx, kc, key.String(), network, bootstrap.TokenRequest{Pool: np.Name, Now: time.Now(), TTL: opts.ttl, SingleUse: opts.singleUse})
	if err != nil {
		return "", err
	}
	if v := poolVersion(np, hc); v != "" {
		line += " --kubernetes-version " + v
	}
	return line, nil
}

// poolVersion is the version a node of the pool joins at: the pool's, or
// (before the NodePool controller pinned it) its control plane's.
func poolVersion(np *hypershiftv1alpha1.NodePool, hc *hypershiftv1alpha1.HostedCluster) string {
	switch {
	case np.Spec.KubernetesVersion != "":
		return np.Spec.KubernetesVersion
	case hc.Status.Version != "":
		return hc.Status.Version
	default:
		return hc.Spec.KubernetesVersion
	}
}

// nonePool finds the NodePool a join command is for.
func nonePool(ctx context.Context, c client.Client, key client.ObjectKey, name string) (*hypershiftv1alpha1.NodePool, error) {
	if name != "" {
		np := &hypershiftv1alpha1.NodePool{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, np); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("nodepool %s/%s not found: list them with `hypershift get nodepools`", key.Namespace, name)
			}
			return nil, err
		}
		if np.Spec.ClusterName != key.Name {
			return nil, fmt.Errorf("nodepool %s/%s belongs to cluster %s, not %s", key.Namespace, name, np.Spec.ClusterName, key.Name)
		}
		if np.Spec.Platform.Type != hypershiftv1alpha1.NonePlatform {
			return nil, fmt.Errorf("nodepool %s/%s has platform %s: only None pools take joined hosts", key.Namespace, name, np.Spec.Platform.Type)
		}
		return np, nil
	}
	list := &hypershiftv1alpha1.NodePoolList{}
	if err := c.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	var found []*hypershiftv1alpha1.NodePool
	var names []string
	for i := range list.Items {
		np := &list.Items[i]
		if np.Spec.ClusterName == key.Name && np.Spec.Platform.Type == hypershiftv1alpha1.NonePlatform {
			found = append(found, np)
			names = append(names, np.Name)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("hosted cluster %s has no NodePool of platform None: create one with `hypershift create nodepool --platform none --cluster-name %s --name NAME`", key, key.Name)
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("hosted cluster %s has several None NodePools (%s): choose one with --nodepool", key, strings.Join(names, ", "))
	}
}
