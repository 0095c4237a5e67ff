package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
)

// newBackupCommand is `hypershift backup cluster`: it asks the operator for
// one backup of a hosted cluster and, with --wait, reports it.
func newBackupCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "backup", Short: "Back up hosted clusters"}
	var o backupOptions
	cluster := &cobra.Command{
		Use:   "cluster --name NAME --to URL --key-file FILE",
		Short: "Write an encrypted archive of a hosted cluster (etcd snapshot, PKI, encryption key, specs) to a bucket URL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := o.validate()
			if err != nil {
				return err
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			return o.run(cmd, c, key)
		},
	}
	f := cluster.Flags()
	f.StringVar(&o.name, "name", "", "name of the HostedCluster (required)")
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster")
	f.StringVar(&o.to, "to", "", "archive URL: file:///dir/name.bak, s3://bucket/key?region=…, gs://bucket/key or azblob://container/key?… (required; the operator writes it)")
	f.StringVar(&o.keyFile, "key-file", "", "archive key: 32 raw bytes or 64 hex digits (`openssl rand -hex 32 > key`)")
	f.BoolVar(&o.wait, "wait", true, "wait for the backup and print its URL, size and duration")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "with --wait: how long to wait")
	cmd.AddCommand(cluster)
	return cmd
}

type backupOptions struct {
	name, namespace, to, keyFile string
	wait                         bool
	timeout                      time.Duration
}

// validate checks every input before anything is written.
func (o *backupOptions) validate() ([]byte, error) {
	if o.name == "" {
		return nil, fmt.Errorf("--name is required: the HostedCluster to back up")
	}
	if o.to == "" {
		return nil, fmt.Errorf("--to is required: where the archive goes, e.g. file:///var/backups/%s.bak", o.name)
	}
	if err := backup.CheckScheme(o.to); err != nil {
		return nil, fmt.Errorf("--to: %w", err)
	}
	return backup.LoadKey(o.keyFile)
}

// requestSecretData is the request Secret's data: the key and the
// credentials of the URL's scheme from this command's environment (the
// operator uses them for this bucket only).
func requestSecretData(rawURL string, key []byte) (map[string][]byte, error) {
	creds, err := credentialsFromEnv(rawURL)
	if err != nil {
		return nil, err
	}
	data := creds.Data()
	data[backup.KeySecretKey] = key
	return data, nil
}

// credentialsFromEnv reads the credentials of rawURL's scheme from this
// command's environment.
func credentialsFromEnv(rawURL string) (*backup.Credentials, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("archive URL %q: %w", rawURL, err)
	}
	creds, err := backup.CredentialsFromEnv(u.Scheme, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return creds, nil
}

// writeRequestSecret creates or updates the Secret NAME-SUFFIX beside the
// cluster, owned by it, so it goes when the cluster goes.
func writeRequestSecret(ctx context.Context, c client.Client, hc *hypershiftv1alpha1.HostedCluster, suffix string, data map[string][]byte) (string, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: hc.Name + "-" + suffix}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Data = data
		return controllerutil.SetOwnerReference(hc, secret, c.Scheme())
	})
	if err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return secret.Name, nil
}

// newBackupRequest writes the request Secret of a backup of hc to rawURL
// (see requestSecretData) and returns the request naming it, and that
// request as the value of the backup request annotation.
func newBackupRequest(ctx context.Context, c client.Client, hc *hypershiftv1alpha1.HostedCluster, rawURL string, key []byte) (hypershiftv1alpha1.BackupRequest, string, error) {
	data, err := requestSecretData(rawURL, key)
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, "", err
	}
	secretName, err := writeRequestSecret(ctx, c, hc, "backup", data)
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, "", err
	}
	req := hypershiftv1alpha1.BackupRequest{ID: newRequestID(), URL: rawURL, Secret: secretName}
	raw, err := json.Marshal(req) //nolint:gosec // names the Secret, holds none of it
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, "", err
	}
	return req, string(raw), nil
}

func newRequestID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b)
}

func (o *backupOptions) run(cmd *cobra.Command, c client.Client, key []byte) error {
	ctx := cmd.Context()
	nn := client.ObjectKey{Namespace: o.namespace, Name: o.name}
	hc, err := getHostedCluster(ctx, c, nn)
	if err != nil {
		return err
	}
	req, raw, err := newBackupRequest(ctx, c, hc, o.to, key)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{hypershiftv1alpha1.BackupRequestAnnotation: raw}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("request backup of %s: %w", nn, err)
	}
	if !o.wait {
		fmt.Fprintf(cmd.OutOrStdout(), "backup %s of hosted cluster %s requested (status.backup reports it)\n", req.ID, nn)
		return nil
	}
	rec, err := waitBackup(ctx, c, nn, req.ID, o.timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "backup %s of hosted cluster %s: %s, %d bytes, %s\n",
		req.ID, nn, rec.URL, rec.SizeBytes, rec.Duration.Round(time.Millisecond))
	return nil
}

// waitBackup waits until the cluster's status answers request id.
func waitBackup(ctx context.Context, c client.Client, nn client.ObjectKey, id string, timeout time.Duration) (*hypershiftv1alpha1.BackupRecord, error) {
	var rec *hypershiftv1alpha1.BackupRecord
	_, err := pollCluster(ctx, c, nn, timeout, nil, func(hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
		st := hc.Status.Backup
		switch {
		case st == nil:
			return false, nil
		case st.LastBackup != nil && st.LastBackup.RequestID == id:
			rec = st.LastBackup
			return true, nil
		case st.FailedRequestID == id:
			msg := "see `hypershift describe cluster`"
			if cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.BackupSucceeded.String()); cond != nil {
				msg = cond.Reason + ": " + cond.Message
			}
			return false, fmt.Errorf("backup of hosted cluster %s failed: %s", nn, msg)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return nil, fmt.Errorf("backup %s of hosted cluster %s not done after %s: see the BackupSucceeded condition (`hypershift describe cluster %s -n %s`)", id, nn, timeout, nn.Name, nn.Namespace)
	}
	return rec, err
}

// printBackup adds the cluster's backups to `describe cluster`: the last
// one (URL, size, age, duration) and the schedule's next time.
func printBackup(w io.Writer, hc *hypershiftv1alpha1.HostedCluster, now time.Time) {
	st := hc.Status.Backup
	if st != nil && st.LastBackup != nil {
		b := st.LastBackup
		fmt.Fprintf(w, "Last backup:\t%s (%d bytes, %s ago, took %s)\n", b.URL, b.SizeBytes,
			duration.HumanDuration(now.Sub(b.Time.Time)), b.Duration.Round(time.Millisecond))
	} else if hc.Spec.Backup != nil || st != nil {
		fmt.Fprintf(w, "Last backup:\t-\n")
	}
	if spec := hc.Spec.Backup; spec != nil {
		next := "-"
		if st != nil && st.NextScheduleTime != nil {
			next = st.NextScheduleTime.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(w, "Backup schedule:\t%s %s to %s, keep %d, next %s\n", spec.Schedule, orDash(spec.TimeZone), spec.URL, spec.Keep, next)
	}
}
