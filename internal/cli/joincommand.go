package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/nodes/join"
)

// newCreateJoinCommandCommand is `hypershift create join-command`: the
// `hypershift join` line of a NodePool of platform None, with a fresh token.
func newCreateJoinCommandCommand(g *clusterclient.Management) *cobra.Command {
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
			c, err := g.Client()
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
