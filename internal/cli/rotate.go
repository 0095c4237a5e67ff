package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

// newRotateCommand is `hypershift rotate ca --name NAME`: it sets
// spec.certificates.rotateCA to a new token, which starts a root-CA
// rotation (docs/security.md, "CA rotation").
func newRotateCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{Use: "rotate", Short: "Rotate a hosted cluster's credentials"}
	var name, namespace, token string
	var waitFor bool
	var timeout time.Duration
	ca := &cobra.Command{
		Use:   "ca",
		Short: "Replace a hosted cluster's CAs in phases; a single-replica control plane's API pauses once, for the etcd CA (spec.certificates.rotateCA)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required: the hosted cluster whose CAs to rotate")
			}
			if token == "" {
				token = time.Now().UTC().Format("20060102T150405Z")
			}
			c, err := g.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			key := client.ObjectKey{Namespace: namespace, Name: name}
			hc, err := clusterclient.Get(ctx, c, key)
			if err != nil {
				return err
			}
			if st := caRotation(hc); st != nil && st.Phase != hypershiftv1alpha1.CARotationDone {
				return fmt.Errorf("hosted cluster %s is rotating its CAs already (token %s, phase %s): wait for it with `hypershift describe cluster %s -n %s`", key, st.Token, st.Phase, name, namespace)
			}
			if st := caRotation(hc); st != nil && st.Token == token {
				return fmt.Errorf("--token %s was rotated for already: pick another token, or leave --token out", token)
			}
			patch := fmt.Appendf(nil, `{"spec":{"certificates":{"rotateCA":%q}}}`, token)
			if err := c.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("hosted cluster %s: %w", key, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: spec.certificates.rotateCA=%s\n", key, token)
			if !waitFor {
				return nil
			}
			return waitCARotation(ctx, cmd, c, key, token, timeout)
		},
	}
	f := ca.Flags()
	f.StringVar(&name, "name", "", "name of the HostedCluster")
	f.StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.StringVar(&token, "token", "", "token that names this rotation (default: the current UTC time)")
	f.BoolVar(&waitFor, "wait", false, "wait until the rotation is Done, printing each phase")
	f.DurationVar(&timeout, "timeout", 15*time.Minute, "with --wait: how long to wait")
	cmd.AddCommand(ca)
	return cmd
}

func caRotation(hc *hypershiftv1alpha1.HostedCluster) *hypershiftv1alpha1.CARotationStatus {
	if hc.Status.Certificates == nil {
		return nil
	}
	return hc.Status.Certificates.CARotation
}

// waitCARotation prints each phase the rotation for token enters until it
// is Done.
func waitCARotation(ctx context.Context, cmd *cobra.Command, c client.Client, key client.ObjectKey, token string, timeout time.Duration) error {
	start := time.Now()
	var last hypershiftv1alpha1.CARotationPhase
	hc, err := clusterclient.Poll(ctx, c, key, timeout, nil, func(hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
		if err := clusterclient.CannotRun(hc); err != nil {
			return false, err
		}
		st := caRotation(hc)
		if st == nil || st.Token != token {
			return false, nil
		}
		if st.Phase != last {
			fmt.Fprintf(cmd.OutOrStdout(), "%6.1fs  %s\n", time.Since(start).Seconds(), st.Phase)
			last = st.Phase
		}
		return st.Phase == hypershiftv1alpha1.CARotationDone, nil
	})
	if wait.Interrupted(err) {
		msg := ""
		if st := caRotation(hc); st != nil {
			msg = fmt.Sprintf(" (phase %s: waiting for %s)", st.Phase, st.Message)
		}
		return fmt.Errorf("hosted cluster %s: CA rotation not done after %s%s: see `hypershift describe cluster %s --namespace %s`", key, timeout, msg, key.Name, key.Namespace)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: CA rotation %s done after %.1fs\n", key, token, time.Since(start).Seconds())
	return nil
}
