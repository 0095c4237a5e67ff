package entrypoint

import (
	"fmt"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/runtime/restore"
)

// newRestoreEtcdDataCommand is `hypershift restore etcd-data`, the restore
// step a runtime runs before an etcd member with a Restore first starts
// (restore.Member): the kube runtime's init container and the process
// runtime's child process. It is not for people: the runtimes render it.
func newRestoreEtcdDataCommand() *cobra.Command {
	var fromDir string
	cmd := &cobra.Command{
		Use:    "etcd-data --from-dir DIR -- ETCD_FLAGS…",
		Short:  "Fill an empty etcd data dir from a backup (a runtime's restore step)",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			msg, err := restore.Member(cmd.Context(), fromDir, args)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&fromDir, "from-dir", "", "directory of the restore's files: url, key, the bucket's credentials, file-root")
	return cmd
}
