package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterclient"
)

// newGetMachinesCommand lists Cluster API's Machines: those of the pools
// of machine platforms (Host), in their clusters' control-plane
// namespaces.
func newGetMachinesCommand(g *clusterclient.Management) *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:     "machines",
		Aliases: []string{"machine"},
		Short:   "List the machines of NodePools of a machine platform (Cluster API Machines) of every control-plane namespace (or of --namespace)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.Client()
			if err != nil {
				return err
			}
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("cluster.x-k8s.io/v1beta2")
			list.SetKind("MachineList")
			if err := c.List(cmd.Context(), list, client.InNamespace(namespace)); err != nil {
				if meta.IsNoMatchError(err) {
					fmt.Fprintln(cmd.OutOrStdout(), "No machines: Cluster API has not run on this management plane yet (it starts with the first pool of platform host).")
					return nil
				}
				return err
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No machines. Create a pool of them with `hypershift create cluster host --name NAME --node-pool-replicas N`.")
				return nil
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
			fmt.Fprintln(w, "NAMESPACE\tNAME\tCLUSTER\tNODEPOOL\tNODE\tPROVIDERID\tVERSION\tPHASE\tAGE")
			for _, m := range list.Items {
				str := func(path ...string) string {
					s, _, _ := unstructured.NestedString(m.Object, path...)
					return orDash(s)
				}
				labels := m.GetLabels()
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.GetNamespace(), m.GetName(),
					orDash(labels["cluster.x-k8s.io/cluster-name"]), orDash(labels["hypershift.dev/nodepool"]),
					str("status", "nodeRef", "name"), str("spec", "providerID"), str("spec", "version"), str("status", "phase"),
					duration.HumanDuration(time.Since(m.GetCreationTimestamp().Time)))
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only this control-plane namespace (NAMESPACE-CLUSTER)")
	return cmd
}
