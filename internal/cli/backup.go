package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/clusterclient"
)

// newBackupCommand is `hypershift backup cluster`: it asks the operator for
// one backup of a hosted cluster and, with --wait, reports it.
func newBackupCommand(g *clusterclient.Management) *cobra.Command {
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
			c, err := g.Client()
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

func (o *backupOptions) run(cmd *cobra.Command, c client.Client, key []byte) error {
	ctx := cmd.Context()
	nn := client.ObjectKey{Namespace: o.namespace, Name: o.name}
	req, err := backup.RequestCluster(ctx, c, nn, o.to, key)
	if err != nil {
		return err
	}
	if !o.wait {
		fmt.Fprintf(cmd.OutOrStdout(), "backup %s of hosted cluster %s requested (status.backup reports it)\n", req.ID, nn)
		return nil
	}
	rec, err := backup.WaitCluster(ctx, c, nn, req.ID, o.timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "backup %s of hosted cluster %s: %s, %d bytes, %s\n",
		req.ID, nn, rec.URL, rec.SizeBytes, rec.Duration.Round(time.Millisecond))
	return nil
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
