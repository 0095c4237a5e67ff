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
			c, err := g.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			key := client.ObjectKey{Namespace: namespace, Name: name}
			rotated, err := RotateCA(ctx, c, key, token)
			if apierrors.IsNotFound(err) {
				return clusterclient.NotFound(key)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: spec.certificates.rotateCA=%s\n", key, rotated)
			if !waitFor {
				return nil
			}
			return waitCARotation(ctx, cmd, c, key, rotated, timeout)
		},
	}
	f := ca.Flags()
	f.StringVar(&name, "name", "", "name of the HostedCluster")
	f.StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.StringVar(&token, "token", "", "token that names this rotation (default: the current UTC time)")
	f.BoolVar(&waitFor, "wait", false, "wait until the rotation is Done, printing each phase")
	f.DurationVar(&timeout, "timeout", 15*time.Minute, "with --wait: how long to wait")
	cmd.AddCommand(ca, newRotateServiceAccountKeyCommand(g))
	return cmd
}

// newRotateServiceAccountKeyCommand is `hypershift rotate
// service-account-key --name NAME`: it sets
// spec.certificates.rotateServiceAccountKey to a new token.
func newRotateServiceAccountKeyCommand(g *clusterclient.Management) *cobra.Command {
	var name, namespace, token string
	var waitFor bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "service-account-key",
		Short: "Replace the key a hosted cluster signs service-account tokens with: the new public key is trusted and published first, the old one retired once its tokens have expired (spec.certificates.rotateServiceAccountKey)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return fmt.Errorf("--name is required: the hosted cluster whose service-account key to rotate")
			}
			c, err := g.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			key := client.ObjectKey{Namespace: namespace, Name: name}
			rotated, err := RotateServiceAccountKey(ctx, c, key, token)
			if apierrors.IsNotFound(err) {
				return clusterclient.NotFound(key)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: spec.certificates.rotateServiceAccountKey=%s\n", key, rotated)
			if !waitFor {
				return nil
			}
			return waitSAKeyRotation(ctx, cmd, c, key, rotated, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "name of the HostedCluster")
	f.StringVarP(&namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.StringVar(&token, "token", "", "token that names this rotation (default: the current UTC time)")
	f.BoolVar(&waitFor, "wait", false, "wait until the new key signs, printing each phase (the old key is retired a day later, when its tokens have expired)")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "with --wait: how long to wait")
	return cmd
}

// waitSAKeyRotation prints each phase the rotation for token enters until
// the new key signs (SignWithNew with its retirement set) or it is Done.
func waitSAKeyRotation(ctx context.Context, cmd *cobra.Command, c client.Client, key client.ObjectKey, token string, timeout time.Duration) error {
	start := time.Now()
	var last hypershiftv1alpha1.ServiceAccountKeyRotationPhase
	hc, err := clusterclient.Poll(ctx, c, key, timeout, nil, func(hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
		if err := clusterclient.CannotRun(hc); err != nil {
			return false, err
		}
		st := saKeyRotation(hc)
		if st == nil || st.Token != token {
			return false, nil
		}
		if st.Phase != last {
			fmt.Fprintf(cmd.OutOrStdout(), "%6.1fs  %s\n", time.Since(start).Seconds(), st.Phase)
			last = st.Phase
		}
		return st.Phase == hypershiftv1alpha1.SAKeyDone || st.RetireAt != nil, nil
	})
	if wait.Interrupted(err) {
		msg := ""
		if st := saKeyRotation(hc); st != nil {
			msg = fmt.Sprintf(" (phase %s: waiting for %s)", st.Phase, st.Message)
		}
		return fmt.Errorf("hosted cluster %s: the new service-account key does not sign after %s%s: see `hypershift describe cluster %s --namespace %s`", key, timeout, msg, key.Name, key.Namespace)
	}
	if err != nil {
		return err
	}
	st := saKeyRotation(hc)
	if st.Phase == hypershiftv1alpha1.SAKeyDone {
		fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: service-account key rotation %s done after %.1fs\n", key, token, time.Since(start).Seconds())
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "hosted cluster %s: the new service-account key signs after %.1fs; the old one is retired at %s\n", key, time.Since(start).Seconds(), st.RetireAt.UTC().Format(time.RFC3339))
	return nil
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
		st := CARotation(hc)
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
		if st := CARotation(hc); st != nil {
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
