package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/migrate"
)

// newMigrateCommand is `hypershift migrate cluster`: it moves a hosted
// cluster to another management plane through a final backup, keeping its
// CAs, keys, endpoint and data, so existing kubeconfigs and
// service-account tokens keep working.
func newMigrateCommand(g *clusterclient.Management) *cobra.Command {
	cmd := &cobra.Command{Use: "migrate", Short: "Move hosted clusters to another management plane"}
	var o migrateOptions
	cluster := &cobra.Command{
		Use:   "cluster --name NAME --to-kubeconfig FILE --via URL --key-file FILE",
		Short: "Fence a hosted cluster, back it up, restore it on another management plane, then remove it here",
		Long: `Moves a hosted cluster to the management plane of --to-kubeconfig:
fences the cluster here (etcd keeps running, every writer stops), takes a
final backup through this plane's operator to --via, restores it through
the target's operator (same CAs, keys and API port), waits until it is
Available there, then deletes it here. The downtime (fence to Available on
the target) is measured and printed. If anything fails before the target
serves, the restored copy (if any) is deleted and the fence lifted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, g)
		},
	}
	f := cluster.Flags()
	f.StringVar(&o.name, "name", "", "name of the HostedCluster (required)")
	f.StringVarP(&o.namespace, "namespace", "n", defaultNamespace, "namespace of the HostedCluster (the same on the target)")
	f.StringVar(&o.TargetKubeconfig, "to-kubeconfig", "", "kubeconfig of the target management plane (required; e.g. its DATA_DIR/management.kubeconfig)")
	f.StringVar(&o.Via, "via", "", "archive URL both operators reach: file:///dir/name.bak, s3://, gs:// or azblob://bucket/key?… (required)")
	f.StringVar(&o.keyFile, "key-file", "", "archive key: 32 raw bytes or 64 hex digits (`openssl rand -hex 32 > key`)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long each step (fence, backup, restore, removal) may take")
	f.StringVar(&o.Publishing, "api-server-publishing", "", "how the target publishes the API server, when it runs the other runtime: HostPort (a plane of `hypershift up`), NodePort or LoadBalancer (a cluster of `hypershift install`); default: as the source")
	f.StringVar(&o.APIServerAddress, "api-server-address", "", "with --api-server-publishing NodePort or LoadBalancer: the address clients use on the target")
	f.StringVar(&o.EtcdStorageClass, "etcd-storage-class", "", "with --api-server-publishing NodePort or LoadBalancer: StorageClass of etcd's volumes on the target (default: its operator's)")
	f.StringVar(&o.EtcdStorageSize, "etcd-storage-size", "", "with --api-server-publishing NodePort or LoadBalancer: size of each etcd member's volume on the target, e.g. 8Gi")
	cmd.AddCommand(cluster)
	return cmd
}

type migrateOptions struct {
	migrate.Options
	name, namespace, keyFile string
}

// run checks every flag before either management plane is contacted,
// builds the two clients and migrates.
func (o *migrateOptions) run(cmd *cobra.Command, g *clusterclient.Management) error {
	switch {
	case o.name == "":
		return errors.New("--name is required: the HostedCluster to move")
	case o.TargetKubeconfig == "":
		return errors.New("--to-kubeconfig is required: the kubeconfig of the target management plane")
	case o.Via == "":
		return fmt.Errorf("--via is required: where the final archive goes, e.g. file:///var/backups/%s-migration.bak", o.name)
	}
	if err := backup.CheckScheme(o.Via); err != nil {
		return fmt.Errorf("--via: %w", err)
	}
	if err := o.CheckPublishing(); err != nil {
		return err
	}
	key, err := backup.LoadKey(o.keyFile)
	if err != nil {
		return err
	}
	src, err := g.Client()
	if err != nil {
		return fmt.Errorf("source management plane: %w", err)
	}
	dst, err := (&clusterclient.Management{Kubeconfig: o.TargetKubeconfig, DataDir: g.DataDir}).Client()
	if err != nil {
		return fmt.Errorf("--to-kubeconfig: %w", err)
	}
	o.Source, o.Target, o.Key = src, dst, key
	o.Cluster = types.NamespacedName{Namespace: o.namespace, Name: o.name}
	o.ErrOut = cmd.ErrOrStderr()
	// An interrupt ends the waiting, and the rollback undoes what was done.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return migrate.Migrate(ctx, o.Options, cmd.OutOrStdout())
}
