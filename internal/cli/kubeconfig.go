package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/clusterclient"
)

// newCreateKubeconfigCommand is `hypershift create kubeconfig`.
func newCreateKubeconfigCommand(g *clusterclient.Management) *cobra.Command {
	var name, namespace, output string
	cmd := &cobra.Command{
		Use:   "kubeconfig --name NAME",
		Short: "Print the admin kubeconfig of a hosted cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required: `hypershift create kubeconfig --name NAME`")
			}
			c, err := g.Client()
			if err != nil {
				return err
			}
			kc, err := clusterclient.AdminKubeconfig(cmd.Context(), c, client.ObjectKey{Namespace: namespace, Name: name})
			if err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err = cmd.OutOrStdout().Write(kc)
				return err
			}
			// A fresh file replaces whatever was there, so an existing
			// file's looser mode never applies to the admin key.
			if err := atomicfile.Write(output, kc, 0o600); err != nil {
				return fmt.Errorf("write kubeconfig of %s/%s to --output: %w", namespace, name, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the hosted cluster (required)")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file (mode 0600) instead of standard output")
	return cmd
}
