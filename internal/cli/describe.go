package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/dump"
	"hypershift.dev/internal/pki"
)

func newDescribeCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show details of a hosted cluster",
	}
	var namespace string
	cluster := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Show a hosted cluster's conditions, components, endpoints and recent events",
		Args:  exactlyOneArg("name the cluster: `hypershift describe cluster NAME`"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			key := client.ObjectKey{Namespace: namespace, Name: args[0]}
			hc, err := clusterclient.Get(ctx, c, key)
			if err != nil {
				return err
			}
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			cpNamespace := hc.Namespace + "-" + hc.Name
			if err := c.Get(ctx, client.ObjectKey{Namespace: cpNamespace, Name: hc.Name}, hcp); client.IgnoreNotFound(err) != nil {
				return err
			}
			var events []corev1.Event
			for _, ns := range []string{hc.Namespace, cpNamespace} {
				list := &corev1.EventList{}
				if err := c.List(ctx, list, client.InNamespace(ns)); err == nil {
					for _, e := range list.Items {
						if e.InvolvedObject.Name == hc.Name {
							events = append(events, e)
						}
					}
				}
			}
			// Read from the PKI Secrets, as stored: what the components
			// are given.
			certs, err := pki.Inspect(pki.SecretStore{Ctx: ctx, Client: c, Namespace: cpNamespace, ReadOnly: true})
			if err != nil {
				return fmt.Errorf("certificates in %s: %w", cpNamespace, err)
			}
			if err := printDescription(cmd.OutOrStdout(), hc, hcp, events); err != nil {
				return err
			}
			return printCertificates(cmd.OutOrStdout(), certs, time.Now())
		},
	}
	cluster.Flags().StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	cmd.AddCommand(cluster, newDescribeAddonCommand(g))
	return cmd
}

func printDescription(out io.Writer, hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane, events []corev1.Event) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Name:\t%s\n", hc.Name)
	fmt.Fprintf(w, "Namespace:\t%s\n", hc.Namespace)
	fmt.Fprintf(w, "Control plane namespace:\t%s\n", orDash(hc.Status.ControlPlaneNamespace))
	fmt.Fprintf(w, "Platform:\t%s\n", hc.Spec.Platform.Type)
	fmt.Fprintf(w, "Availability policy:\t%s\n", hc.Spec.ControllerAvailabilityPolicy)
	fmt.Fprintf(w, "Version:\t%s\n", orDash(hc.Status.Version))
	fmt.Fprintf(w, "Endpoint:\t%s\n", orDash(hc.Status.Endpoint))
	if q := hc.Status.StartQueue; q != nil {
		fmt.Fprintf(w, "Start queue:\tposition %d of %d, queued %s ago\n", q.Position, q.Length, duration.HumanDuration(time.Since(q.Since.Time)))
	}
	printHibernation(w, hc, hcp)
	printCARotation(w, hc)
	printIssuer(w, hc)
	if hc.Status.KubeConfig != nil {
		fmt.Fprintf(w, "Kubeconfig secret:\t%s/%s\n", hc.Namespace, hc.Status.KubeConfig.Name)
	}
	printBackup(w, hc, time.Now())
	fmt.Fprintf(w, "Created:\t%s (%s ago)\n", hc.CreationTimestamp.UTC().Format(time.RFC3339), duration.HumanDuration(time.Since(hc.CreationTimestamp.Time)))
	if !hc.DeletionTimestamp.IsZero() {
		fmt.Fprintf(w, "Deleting since:\t%s\n", hc.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w, "\nConditions:")
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range hc.Status.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	printVersionHistory(w, hc.Status.VersionHistory)
	if section(w, "Components", len(hcp.Status.Components), "(none reported yet)", "NAME\tSTATE\tPID\tRESTARTS\tLAST EXIT\tSTARTED\tVERSION") {
		for _, s := range hcp.Status.Components {
			started := "-"
			if s.StartedAt != nil {
				started = duration.HumanDuration(time.Since(s.StartedAt.Time)) + " ago"
			}
			fmt.Fprintf(w, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\n", s.Name, s.Phase, s.PID, s.Restarts, orDash(s.LastExitReason), started, orDash(s.Version))
		}
	}
	if section(w, "Data plane (objects in the hosted cluster)", len(hcp.Status.DataPlane), "(none applied yet)", "KIND\tNAMESPACE\tNAME\tREADY\tHEALTHY\tMESSAGE") {
		for _, o := range hcp.Status.DataPlane {
			healthy := "yes"
			if !o.Healthy {
				healthy = "no"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\n", o.Kind, orDash(o.Namespace), o.Name, orDash(o.Ready), healthy, orDash(o.Message))
		}
	}
	if section(w, "Events", len(events), "(none)", "AGE\tTYPE\tREASON\tOBJECT\tMESSAGE") {
		sort.Slice(events, func(i, j int) bool { return dump.EventTime(events[i]).Before(dump.EventTime(events[j])) })
		if len(events) > 15 {
			events = events[len(events)-15:]
		}
		for _, e := range events {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", duration.HumanDuration(time.Since(dump.EventTime(e))), e.Type, e.Reason, e.InvolvedObject.Kind, e.Message)
		}
	}
	return w.Flush()
}

// printVersionHistory lists the versions the control plane was rolled out
// to, newest first.
func printVersionHistory(w io.Writer, history []hypershiftv1alpha1.VersionHistory) {
	if !section(w, "Version history", len(history), "(none yet)", "VERSION\tSTATE\tSTARTED\tCOMPLETED") {
		return
	}
	for _, h := range history {
		completed := "-"
		if h.CompletionTime != nil {
			completed = h.CompletionTime.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", h.Version, h.State, h.StartedTime.UTC().Format(time.RFC3339), completed)
	}
}

// section starts a titled table of describe's output: its header when it
// has rows (and says so), else the none line.
func section(w io.Writer, title string, rows int, none, header string) bool {
	fmt.Fprintf(w, "\n%s:\n", title)
	if rows == 0 {
		fmt.Fprintln(w, "  "+none)
		return false
	}
	fmt.Fprintln(w, "  "+header)
	return true
}

// printCertificates lists the cluster's certificates: when each expires and
// when a leaf is renewed (CAs are not renewed automatically).
func printCertificates(out io.Writer, certs []pki.CertificateStatus, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if section(w, "Certificates", len(certs), "(none yet)", "NAME\tKIND\tEXPIRES\tRENEWS") {
		for _, c := range certs {
			kind, renews := "leaf", when(c.RenewAt, now)
			switch {
			case strings.HasSuffix(c.Name, pki.NextName("")):
				kind, renews = "CA (new)", "- (rotation in progress)"
			case strings.HasSuffix(c.Name, pki.PreviousName("")):
				kind, renews = "CA (old)", "- (dropped by the rotation)"
			case c.CA:
				kind, renews = "CA", "- (`hypershift rotate ca`)"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Name, kind, when(c.NotAfter, now), renews)
		}
	}
	return w.Flush()
}

// when is a time and how far it is from now.
func when(t, now time.Time) string {
	d := t.Sub(now)
	if d < 0 {
		return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), duration.HumanDuration(-d))
	}
	return fmt.Sprintf("%s (in %s)", t.UTC().Format(time.RFC3339), duration.HumanDuration(d))
}

// printCARotation shows the last root-CA rotation: its phase, since when,
// and what it waits for.
func printCARotation(w io.Writer, hc *hypershiftv1alpha1.HostedCluster) {
	st := CARotation(hc)
	if st == nil {
		fmt.Fprintf(w, "CA rotation:\t-\n")
		return
	}
	line := fmt.Sprintf("%s (token %s, started %s, phase since %s)", st.Phase, st.Token,
		st.StartedAt.UTC().Format(time.RFC3339), st.PhaseSince.UTC().Format(time.RFC3339))
	if st.CompletedAt != nil {
		line = fmt.Sprintf("%s (token %s, started %s, completed %s)", st.Phase, st.Token,
			st.StartedAt.UTC().Format(time.RFC3339), st.CompletedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "CA rotation:\t%s\n", line)
	if st.Message != "" && st.Phase != hypershiftv1alpha1.CARotationDone {
		fmt.Fprintf(w, "  waiting for:\t%s\n", st.Message)
	}
}

// printIssuer says who issues the cluster's service-account tokens, with
// which keys, and where the documents are published.
func printIssuer(w io.Writer, hc *hypershiftv1alpha1.HostedCluster) {
	st := hc.Status.ServiceAccountIssuer
	issuer := hc.Spec.IssuerURL
	if st != nil {
		issuer = st.IssuerURL
	}
	fmt.Fprintf(w, "Service-account issuer:\t%s\n", orDash(issuer))
	if st != nil && len(st.KeyIDs) > 0 {
		fmt.Fprintf(w, "  key ids:\t%s\n", strings.Join(st.KeyIDs, ", "))
	}
	if r := saKeyRotation(hc); r != nil {
		line := fmt.Sprintf("%s (token %s, started %s)", r.Phase, r.Token, r.StartedAt.UTC().Format(time.RFC3339))
		switch {
		case r.CompletedAt != nil:
			line = fmt.Sprintf("%s (token %s, completed %s)", r.Phase, r.Token, r.CompletedAt.UTC().Format(time.RFC3339))
		case r.RetireAt != nil:
			line += ", old key retired at " + r.RetireAt.UTC().Format(time.RFC3339)
		case r.Message != "":
			line += ", waiting for " + r.Message
		}
		fmt.Fprintf(w, "  key rotation:\t%s\n", line)
	}
	if p := hc.Spec.OIDCPublishing; p != nil {
		published := "not yet"
		if st != nil && st.PublishedAt != nil {
			published = st.PublishedAt.UTC().Format(time.RFC3339)
		}
		keep := ""
		if p.KeepOnDelete {
			keep = ", kept on delete"
		}
		fmt.Fprintf(w, "  published to:\t%s (last %s%s)\n", p.StorageURL, published, keep)
	}
	if k := hc.Spec.ServiceAccountSigningKey; k != nil {
		fmt.Fprintf(w, "  signing key:\tSecret %s/%s\n", hc.Namespace, k.Name)
	}
	if wh := hc.Spec.WorkloadIdentityWebhook; wh != nil {
		fmt.Fprintf(w, "  workload-identity webhook:\ton (Azure tenant %s, AWS region %s)\n", orDash(wh.AzureTenantID), orDash(wh.AWSRegion))
	}
}
