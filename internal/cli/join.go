package cli

import (
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hypershift.dev/internal/nodes/join"
	"hypershift.dev/internal/nodes/machine"
)

type joinOptions struct {
	join.Options
	tokenFile string
	reset     bool
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
	f.StringVar(&o.Server, "server", "", "URL of the hosted cluster's API server")
	f.StringVar(&o.Token, "token", "", "bootstrap token of a NodePool (visible to other users of this host in the process list while join runs: prefer --token-file)")
	f.StringVar(&o.tokenFile, "token-file", "", "file holding the bootstrap token, or - to read it from standard input")
	f.StringVar(&o.CAHash, "ca-cert-hash", "", "hash of the cluster CA's public key, sha256:<hex>")
	f.StringVar(&o.NodeDir, "node-dir", join.DefaultDataDir, "directory for everything the node keeps")
	f.StringVar(&o.NodeName, "node-name", "", "name of the Node (default: the host name)")
	f.StringVar(&o.NodeIP, "node-ip", "", "address the API server reaches the kubelet on (default: the host's first global IPv4)")
	f.StringVar(&o.ProviderID, "provider-id", os.Getenv(machine.ProviderIDEnv), "the Node's spec.providerID, PROVIDER://ID as the machine's provider names it (default: $"+machine.ProviderIDEnv+", set in a machine's userdata)")
	f.StringVar(&o.CNIBinDir, "cni-bin-dir", join.DefaultCNIBinDir, "directory of the CNI plugins")
	f.IntVar(&o.KubeletPort, "kubelet-port", join.DefaultKubeletPort, "port the kubelet serves on (the API server reaches it there for logs and exec)")
	f.StringVar(&o.KubernetesVersion, "kubernetes-version", "", "Kubernetes version of the kubelet and kube-proxy, fetched from the control plane's release server when it is not the one compiled into hypershift (default: the compiled-in one; `create join-command` prints the pool's)")
	f.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long to wait for the node to be Ready")
	f.BoolVar(&o.reset, "reset", false, "stop the node and remove everything a join made on this host")
	return cmd
}

func (o *joinOptions) run(cmd *cobra.Command) error {
	if err := o.readToken(cmd.InOrStdin()); err != nil {
		return err
	}
	return join.Join(cmd.Context(), o.Options, cmd.OutOrStdout())
}

// readToken takes the token from --token-file (a file, or - for standard
// input), which keeps it out of the process list, unlike --token.
func (o *joinOptions) readToken(stdin io.Reader) error {
	if o.tokenFile == "" {
		return nil
	}
	if o.Token != "" {
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
	o.Token = strings.TrimSpace(string(data))
	if o.Token == "" {
		return fmt.Errorf("--token-file %s is empty: it must hold the token ID.SECRET printed by `hypershift create join-command`", o.tokenFile)
	}
	return nil
}

func (o *joinOptions) runReset(cmd *cobra.Command) error {
	n, joined, err := join.Load(o.NodeDir)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !joined {
		fmt.Fprintf(out, "nothing to reset: no node under %s\n", o.NodeDir)
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
	fmt.Fprintf(out, "node %s stopped; removed its containers, network, cgroups and %s\n", n.Name, o.NodeDir)
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
	var tok join.TokenOptions
	cmd := &cobra.Command{
		Use:   "join-command --name CLUSTER",
		Short: "Print the command that joins a host to a hosted cluster's NodePool of platform None, with a fresh token",
		Long: "join-command makes a bootstrap token for the NodePool and prints the `hypershift join` line that uses it\n" +
			"(on standard output; a hint on standard error). The token lets anyone who has it add a node to the pool\n" +
			"until it expires (--ttl, at most " + join.MaxTokenTTL.String() + "); with --single-use it is deleted once one node used it.\n" +
			"On the node, prefer --token-file over --token: a token on the command line is visible to other local users.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return errors.New("--name is required: `hypershift create join-command --name CLUSTER`")
			}
			if err := tok.Check(); err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			line, err := join.Command(cmd.Context(), c, client.ObjectKey{Namespace: namespace, Name: name}, pool, tok)
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
	cmd.Flags().DurationVar(&tok.TTL, "ttl", time.Hour, "how long the token may be used to join, at most "+join.MaxTokenTTL.String())
	cmd.Flags().BoolVar(&tok.SingleUse, "single-use", false, "delete the token once one node got its client certificate with it")
	return cmd
}
