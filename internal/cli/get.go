package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func newGetCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List hosted clusters",
	}
	var namespace string
	clusters := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "hostedclusters"},
		Short:   "List hosted clusters of every namespace (or of --namespace)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			list := &hypershiftv1alpha1.HostedClusterList{}
			return printList(cmd, g, namespace, list,
				"No hosted clusters. Create one with `hypershift create cluster none --name NAME --wait`.",
				"NAMESPACE\tNAME\tVERSION\tAVAILABLE\tPROGRESSING\tHIBERNATION\tNODES (READY/ALL)\tENDPOINT\tAGE",
				func(w io.Writer) {
					for _, hc := range list.Items {
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", hc.Namespace, hc.Name, orDash(hc.Status.Version),
							availability(hc.Status),
							conditionStatus(hc.Status, hypershiftv1alpha1.Progressing),
							hibernationState(hc.Status),
							hc.Status.ReadyNodeCount, hc.Status.NodeCount,
							orDash(hc.Status.Endpoint), duration.HumanDuration(time.Since(hc.CreationTimestamp.Time)))
					}
				})
		},
	}
	clusters.Flags().StringVarP(&namespace, "namespace", "n", "", "only this namespace")
	cmd.AddCommand(clusters, newGetAddonsCommand(g))
	return cmd
}

// printList lists into list the objects of namespace (every namespace when
// it is empty) and prints them as a table of header and the rows print
// writes, or empty when there are none.
func printList(cmd *cobra.Command, g *globalOptions, namespace string, list client.ObjectList, empty, header string, print func(w io.Writer)) error {
	c, err := g.client()
	if err != nil {
		return err
	}
	if err := c.List(cmd.Context(), list, client.InNamespace(namespace)); err != nil {
		return err
	}
	if meta.LenList(list) == 0 {
		fmt.Fprintln(cmd.OutOrStdout(), empty)
		return nil
	}
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
	fmt.Fprintln(w, header)
	print(w)
	return w.Flush()
}

func conditionStatus(s hypershiftv1alpha1.HostedClusterStatus, typ hypershiftv1alpha1.ConditionType) string {
	if c := meta.FindStatusCondition(s.Conditions, typ.String()); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

// availability is the AVAILABLE column: the condition's status, or where
// the cluster waits in the start queue.
func availability(s hypershiftv1alpha1.HostedClusterStatus) string {
	if q := s.StartQueue; q != nil {
		return fmt.Sprintf("Queued (%d of %d)", q.Position, q.Length)
	}
	return conditionStatus(s, hypershiftv1alpha1.Available)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
