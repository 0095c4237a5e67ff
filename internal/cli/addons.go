package cli

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

// newGetAddonsCommand lists ObjectDeployments (docs/addons.md).
func newGetAddonsCommand(g *clusterclient.Management) *cobra.Command {
	return newListCommand(g, &cobra.Command{
		Use:     "addons",
		Aliases: []string{"addon", "objectdeployments"},
		Short:   "List addons (ObjectDeployments) of every namespace (or of --namespace) and what holds each rollout",
	},
		"No addons. Apply an ObjectDeployment into a control-plane namespace (docs/addons.md).",
		"NAMESPACE\tNAME\tREVISION\tAVAILABLE\tPROGRESSING\tHELD BY\tAGE",
		func(w io.Writer, list *hypershiftv1alpha1.ObjectDeploymentList) {
			for _, od := range list.Items {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", od.Namespace, od.Name, od.Status.Revision,
					conditionStatus(od.Status.Conditions, hypershiftv1alpha1.AddonAvailable),
					conditionStatus(od.Status.Conditions, hypershiftv1alpha1.AddonProgressing),
					heldBy(od.Status.Holding), duration.HumanDuration(time.Since(od.CreationTimestamp.Time)))
			}
		})
}

// newDescribeAddonCommand shows an ObjectDeployment's revisions and phases.
func newDescribeAddonCommand(g *clusterclient.Management) *cobra.Command {
	var namespace string
	cmd := &cobra.Command{
		Use:   "addon NAME",
		Short: "Show an addon's conditions, what holds its rollout, and each revision's phases",
		Args:  exactlyOneArg("name the addon: `hypershift describe addon NAME -n NAMESPACE`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.Client()
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: namespace, Name: args[0]}
			od := &hypershiftv1alpha1.ObjectDeployment{}
			if err := c.Get(cmd.Context(), key, od); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("addon %s not found: list them with `hypershift get addons`", key)
				}
				return err
			}
			sets := &hypershiftv1alpha1.ObjectSetList{}
			if err := c.List(cmd.Context(), sets, client.InNamespace(namespace), client.MatchingLabels{hypershiftv1alpha1.ObjectDeploymentLabel: od.Name}); err != nil {
				return err
			}
			return printAddon(cmd.OutOrStdout(), od, sets.Items)
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the ObjectDeployment (the control-plane namespace)")
	return cmd
}

func printAddon(out io.Writer, od *hypershiftv1alpha1.ObjectDeployment, sets []hypershiftv1alpha1.ObjectSet) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Name:\t%s/%s\n", od.Namespace, od.Name)
	fmt.Fprintf(w, "Revision:\t%d (template %s)\n", od.Status.Revision, orDash(od.Status.TemplateHash))
	fmt.Fprintf(w, "Held by:\t%s\n", heldBy(od.Status.Holding))
	if h := od.Status.Holding; h != nil {
		fmt.Fprintf(w, "  Reason:\t%s\n  Message:\t%s\n", h.Reason, h.Message)
	}
	fmt.Fprintln(w, "Conditions:")
	for _, cond := range od.Status.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Spec.Revision > sets[j].Spec.Revision })
	for _, set := range sets {
		fmt.Fprintf(w, "Revision %d (%s, ObjectSet %s):\n", set.Spec.Revision, set.Spec.LifecycleState, set.Name)
		for _, p := range set.Status.Phases {
			side := "management cluster"
			if p.Class == hypershiftv1alpha1.HostedClusterPhaseClass {
				side = "hosted cluster"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", p.Name, side, p.State, p.Message)
		}
	}
	return w.Flush()
}

// heldBy is "phase: object" of what holds a rollout, or "-".
func heldBy(h *hypershiftv1alpha1.RolloutHold) string {
	switch {
	case h == nil:
		return "-"
	case h.Object == "":
		return fmt.Sprintf("phase %s (%s)", h.Phase, h.Reason)
	}
	return fmt.Sprintf("phase %s: %s (%s)", h.Phase, h.Object, h.Reason)
}
