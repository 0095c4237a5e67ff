package cli

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

func newGetCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List hosted clusters",
	}
	clusters := newListCommand(g, &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "hostedclusters"},
		Short:   "List hosted clusters of every namespace (or of --namespace)",
	},
		"No hosted clusters. Create one with `hypershift create cluster none --name NAME --wait`.",
		"NAMESPACE\tNAME\tVERSION\tAVAILABLE\tPROGRESSING\tHIBERNATION\tNODES (READY/ALL)\tENDPOINT\tAGE",
		func(w io.Writer, list *hypershiftv1alpha1.HostedClusterList) {
			for _, hc := range list.Items {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", hc.Namespace, hc.Name, orDash(hc.Status.Version),
					availability(hc.Status),
					conditionStatus(hc.Status.Conditions, hypershiftv1alpha1.Progressing),
					hibernationState(hc.Status),
					hc.Status.ReadyNodeCount, hc.Status.NodeCount,
					orDash(hc.Status.Endpoint), duration.HumanDuration(time.Since(hc.CreationTimestamp.Time)))
			}
		})
	cmd.AddCommand(clusters, newGetAddonsCommand(g), newGetMachinesCommand(g))
	return cmd
}

// newListCommand completes cmd (its Use, Aliases and Short set) as a
// command that lists the objects of every namespace (or of --namespace)
// into a new list L and prints them as a table of header and the rows
// print writes, or empty when there are none.
func newListCommand[T any, L interface {
	*T
	client.ObjectList
}](g *clusterclient.Management, cmd *cobra.Command, empty, header string, print func(w io.Writer, list L)) *cobra.Command {
	var namespace string
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, err := g.Client()
		if err != nil {
			return err
		}
		list := L(new(T))
		if err := c.List(cmd.Context(), list, client.InNamespace(namespace)); err != nil {
			return err
		}
		if meta.LenList(list) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), empty)
			return nil
		}
		w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 3, ' ', 0)
		fmt.Fprintln(w, header)
		print(w, list)
		return w.Flush()
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only this namespace")
	return cmd
}

// exactlyOneArg accepts exactly one argument; else it fails with msg (what
// to name, and how).
func exactlyOneArg(msg string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return errors.New(msg)
		}
		return nil
	}
}

// conditionStatus is the status of condition typ of conds, or "Unknown".
func conditionStatus(conds []metav1.Condition, typ hypershiftv1alpha1.ConditionType) string {
	if c := meta.FindStatusCondition(conds, typ.String()); c != nil {
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
	return conditionStatus(s.Conditions, hypershiftv1alpha1.Available)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
