package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

// newHibernateCommand is `hypershift hibernate cluster NAME`, and with
// resume set `hypershift resume cluster NAME`: they set
// spec.hibernation.enabled.
func newHibernateCommand(g *clusterclient.Management, resume bool) *cobra.Command {
	verb, short := "hibernate", "Stop a hosted cluster's control plane, keeping its data"
	if resume {
		verb, short = "resume", "Start a hibernated hosted cluster's control plane again"
	}
	cmd := &cobra.Command{Use: verb, Short: short}
	var namespace string
	var waitFor bool
	var timeout time.Duration
	cluster := &cobra.Command{
		Use:   "cluster NAME",
		Short: short + " (spec.hibernation.enabled)",
		Args:  exactlyOneArg(fmt.Sprintf("name the cluster: `hypershift %s cluster NAME`", verb)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.Client()
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: namespace, Name: args[0]}
			hc, err := SetHibernation(cmd.Context(), c, key, !resume)
			if err != nil {
				if apierrors.IsNotFound(err) {
					return clusterclient.NotFound(key)
				}
				return err
			}
			if !waitFor {
				fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: spec.hibernation.enabled=%t\n", key, !resume)
				return nil
			}
			if resume {
				return clusterclient.WaitAvailable(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, key, timeout)
			}
			return waitHibernated(cmd.Context(), cmd, c, key, hc.Generation, timeout)
		},
	}
	f := cluster.Flags()
	f.StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.BoolVar(&waitFor, "wait", false, "wait until the control plane is hibernated (resume: Available)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "with --wait: how long to wait")
	cmd.AddCommand(cluster)
	return cmd
}

// waitHibernated waits until the cluster reports Hibernated=True for the
// generation that asked for it.
func waitHibernated(ctx context.Context, cmd *cobra.Command, c client.Client, key client.ObjectKey, generation int64, timeout time.Duration) error {
	start := time.Now()
	seen := map[string]string{}
	_, err := clusterclient.Poll(ctx, c, key, timeout, nil, func(hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
		clusterclient.PrintConditionChanges(cmd.OutOrStdout(), start, hc.Status.Conditions, seen)
		if err := clusterclient.CannotRun(hc); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String())
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration >= generation, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("hosted cluster %s not hibernated after %s: see `hypershift describe cluster %s --namespace %s`", key, timeout, key.Name, key.Namespace)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s is hibernated after %.1fs\n", key, time.Since(start).Seconds())
	return nil
}

// hibernationState is a cluster's line in `get clusters` and `describe`:
// why it sleeps, or that it is on its way, or "-".
func hibernationState(s hypershiftv1alpha1.HostedClusterStatus) string {
	c := meta.FindStatusCondition(s.Conditions, hypershiftv1alpha1.Hibernated.String())
	switch {
	case c == nil:
		return "-"
	case c.Status == metav1.ConditionTrue:
		return c.Reason
	case c.Reason == hypershiftv1alpha1.HibernatingReason.String() || c.Reason == hypershiftv1alpha1.ResumingReason.String():
		return c.Reason
	}
	return "-"
}

// printHibernation is describe's hibernation lines: the spec, the state and
// the last client activity.
func printHibernation(w io.Writer, hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane) {
	h := hc.Spec.Hibernation
	if h == nil {
		return
	}
	var spec []string
	if h.Enabled {
		spec = append(spec, "enabled")
	}
	for _, s := range h.Schedules {
		spec = append(spec, fmt.Sprintf("hibernate %q resume %q", s.Hibernate, s.Resume))
	}
	if h.TimeZone != "" {
		spec = append(spec, "in "+h.TimeZone)
	}
	if h.IdleAfter != nil {
		spec = append(spec, "idle after "+h.IdleAfter.Duration.String())
	}
	fmt.Fprintf(w, "Hibernation:\t%s\n", orDash(strings.Join(spec, ", ")))
	fmt.Fprintf(w, "Hibernation state:\t%s\n", hibernationState(hc.Status))
	if a := hcp.Status.Activity; a != nil && a.LastActivityTime != nil {
		fmt.Fprintf(w, "Last client activity:\t%s (%s ago)\n", a.LastActivityTime.UTC().Format(time.RFC3339),
			duration.HumanDuration(time.Since(a.LastActivityTime.Time)))
	}
}
