package entrypoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"hypershift.dev/internal/nodes/cloudmeta"
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
	f.StringVar(&o.VolumesDir, "volumes-dir", os.Getenv(machine.VolumesDirEnv), "directory where the machine has the volumes its infrastructure attaches to it, one mount point per volume: the node runs the CSI plugin of csi.hypershift.dev on it (default: $"+machine.VolumesDirEnv+", set in a pod machine)")
	f.StringVar(&o.ProviderIDFrom, "provider-id-from", "", "learn the Node's name and provider ID from what the machine's infrastructure provider reports: aws (EC2 instance metadata), azure (Azure instance metadata) or kubevirt (the host name); instead of --node-name and --provider-id (the userdata of KubeVirt, AWS and Azure machines passes it)")
	f.StringVar(&o.Metadata.Endpoint, "metadata-endpoint", cloudmeta.DefaultEndpoint, "base URL of the instance metadata service (tests)")
	_ = f.MarkHidden("metadata-endpoint")
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
