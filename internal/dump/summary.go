package dump

import (
	"bytes"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// summary is the page to read first: the cluster's conditions, every
// component that is not running (with the last lines of its log), the
// hosted cluster's nodes and pods, and what could not be collected.
func summary(hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane, logs []logTail, hosted hostedView, problems []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Hosted cluster %s/%s (uid %s)\n", hc.Namespace, hc.Name, hc.UID)
	fmt.Fprintf(&b, "Version: %s   Endpoint: %s   Control plane namespace: %s\n\n", hc.Status.Version, hc.Status.Endpoint, ControlPlaneNamespace(hc))

	b.WriteString("Conditions:\n")
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tMESSAGE")
	for _, c := range hc.Status.Conditions {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
	_ = w.Flush()

	b.WriteString("\nComponents:\n")
	if hcp == nil {
		b.WriteString("  (no HostedControlPlane)\n")
	} else {
		w = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "  NAME\tPHASE\tRESTARTS\tLAST EXIT\tLOG")
		for _, c := range hcp.Status.Components {
			fmt.Fprintf(w, "  %s\t%s\t%d\t%s\t%s\n", c.Name, c.Phase, c.Restarts, dash(c.LastExitReason), dash(logOf(logs, c.Name)))
		}
		_ = w.Flush()
		for _, c := range hcp.Status.Components {
			if c.Phase == hypershiftv1alpha1.ComponentRunning && c.Restarts == 0 {
				continue
			}
			fmt.Fprintf(&b, "\n%s is %s after %d restarts (last exit: %s)", c.Name, c.Phase, c.Restarts, dash(c.LastExitReason))
			if c.Message != "" {
				fmt.Fprintf(&b, ":\n%s\n", indent(c.Message))
			} else {
				b.WriteString("\n")
			}
		}
	}

	b.WriteString("\nHosted cluster:\n")
	if !hosted.Reached {
		b.WriteString("  not reachable (see problems)\n")
	} else {
		fmt.Fprintf(&b, "  nodes: %d ready of %d", hosted.Ready, hosted.Nodes)
		if len(hosted.NotReadyNodes) > 0 {
			fmt.Fprintf(&b, " (not ready: %s)", strings.Join(hosted.NotReadyNodes, ", "))
		}
		fmt.Fprintf(&b, "\n  pods not running or not ready: %d\n", len(hosted.NotRunning))
		for _, p := range hosted.NotRunning {
			fmt.Fprintf(&b, "    %s\n", p)
		}
	}
	if len(problems) > 0 {
		b.WriteString("\nNot collected:\n")
		for _, p := range problems {
			fmt.Fprintf(&b, "  %s\n", p)
		}
	}
	return b.Bytes()
}

// logOf names the dumped log of a component instance: its file on the
// process runtime, or the first container log of its pod (named after
// the instance) on the kube runtime.
func logOf(logs []logTail, instance string) string {
	for _, l := range logs {
		if l.Instance == instance || strings.HasPrefix(l.Instance, instance+"/") || strings.HasPrefix(l.Instance, instance+"-") {
			return l.Path
		}
	}
	return ""
}

// eventTable prints events the way `kubectl get events` does.
func eventTable(events []corev1.Event) []byte {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "LAST SEEN\tTYPE\tREASON\tOBJECT\tCOUNT\tMESSAGE")
	for _, e := range events {
		o := e.InvolvedObject
		fmt.Fprintf(w, "%s\t%s\t%s\t%s/%s\t%d\t%s\n", EventTime(e).UTC().Format(time.RFC3339), e.Type, e.Reason, strings.ToLower(o.Kind), o.Name, max(e.Count, 1), oneLine(e.Message))
	}
	_ = w.Flush()
	return b.Bytes()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
