package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

func newDestroyCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "destroy",
		Short: "Destroy hosted clusters",
	}
	var name, namespace string
	var wait bool
	var timeout time.Duration
	cluster := &cobra.Command{
		Use:   "cluster --name NAME",
		Short: "Destroy a hosted cluster: its control plane, data and namespace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required: `hypershift destroy cluster --name NAME`")
			}
			c, err := g.Client()
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: namespace, Name: name}
			hc, err := clusterclient.Get(cmd.Context(), c, key)
			if err != nil {
				return err
			}
			if err := c.Delete(cmd.Context(), hc); client.IgnoreNotFound(err) != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "hostedcluster %s deletion requested\n", key)
			if !wait {
				return nil
			}
			return waitGone(cmd, c, key, timeout)
		},
	}
	f := cluster.Flags()
	f.StringVar(&name, "name", "", "name of the hosted cluster (required)")
	f.StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.BoolVar(&wait, "wait", false, "wait until everything of the cluster is gone")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait: how long to wait")
	cmd.AddCommand(cluster)
	return cmd
}

func waitGone(cmd *cobra.Command, c client.Client, key client.ObjectKey, timeout time.Duration) error {
	start := time.Now()
	err := wait.PollUntilContextTimeout(cmd.Context(), clusterclient.PollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, key, &hypershiftv1alpha1.HostedCluster{})), nil
	})
	if err != nil {
		return fmt.Errorf("hosted cluster %s still present after %s: see `hypershift describe cluster %s`", key, timeout, key.Name)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s destroyed after %.1fs\n", key, time.Since(start).Seconds())
	return nil
}
