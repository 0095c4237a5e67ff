package cli

import (
	"time"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/clusterclient"
)

// newRestoreCommand is `hypershift restore cluster`: it reads and checks an
// archive, then creates the HostedCluster (marked for restore) and its
// NodePools; the operator restores the PKI, encryption key and etcd data.
func newRestoreCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{Use: "restore", Short: "Restore hosted clusters from backups"}
	var o restoreOptions
	cluster := &cobra.Command{
		Use:   "cluster --from URL --key-file FILE",
		Short: "Recreate a hosted cluster from an archive of `hypershift backup cluster` (same CAs, keys and objects)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	f := cluster.Flags()
	f.StringVar(&o.From, "from", "", "archive URL: file:///dir/name.bak, s3://, gs:// or azblob://bucket/key?… (required; this command and the operator read it)")
	f.StringVar(&o.keyFile, "key-file", "", "archive key the backup was made with")
	f.StringVar(&o.Name, "name", "", "name of the restored HostedCluster (default: the archived one's)")
	f.StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the restored HostedCluster (default: the archived one's)")
	f.BoolVar(&o.Overwrite, "overwrite", false, "delete the existing HostedCluster --name in --namespace first (both required), and wait until it is gone")
	f.BoolVar(&o.Wait, "wait", true, "wait until the restored cluster is Available")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long to wait for a deletion (--overwrite) and for Available")
	cmd.AddCommand(cluster) // and etcd-data, an entry point (internal/entrypoint)
	return cmd
}

type restoreOptions struct {
	backup.RestoreOptions
	keyFile string
}

func (o *restoreOptions) run(cmd *cobra.Command, g *clusterclient.Management) error {
	if err := o.Validate(); err != nil {
		return err
	}
	key, err := backup.LoadKey(o.keyFile)
	if err != nil {
		return err
	}
	o.Key = key
	// The archive is read, decrypted and checked before anything is made.
	a, err := backup.ReadCluster(cmd.Context(), o.RestoreOptions)
	if err != nil {
		return err
	}
	c, err := g.Client()
	if err != nil {
		return err
	}
	return backup.RestoreCluster(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, a, o.RestoreOptions)
}
