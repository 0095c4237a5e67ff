package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/runtime"
)

// newRestoreEtcdDataCommand is `hypershift restore etcd-data`, which fills
// one etcd member's empty data dir from a backup: the init container the
// kube runtime puts before etcd in the pods of a control plane marked for
// restore (internal/runtime/kube restore.go; --from-dir), and the child
// process the operator of the process runtime runs for each member
// (--snapshot), so that a malformed snapshot — the tenant's data — cannot
// take the operator down. It is not for people: the operator renders it.
func newRestoreEtcdDataCommand() *cobra.Command {
	var fromDir, snapshotFile string
	cmd := &cobra.Command{
		Use:    "etcd-data (--from-dir DIR | --snapshot FILE) -- ETCD_FLAGS…",
		Short:  "Fill an empty etcd data dir from a backup (the operator's restore step)",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var msg string
			var err error
			switch {
			case fromDir != "" && snapshotFile != "":
				err = errors.New("--from-dir and --snapshot exclude each other")
			case snapshotFile != "":
				msg, err = restoreEtcdSnapshot(snapshotFile, args)
			default:
				msg, err = restoreEtcdData(cmd.Context(), fromDir, args)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	cmd.Flags().StringVar(&fromDir, "from-dir", "", "directory of the restore Secret: url, key and the bucket's credentials")
	cmd.Flags().StringVar(&snapshotFile, "snapshot", "", "an etcd snapshot file, already read from the archive")
	return cmd
}

// restoreEtcdSnapshot restores the etcd member the flags describe from the
// snapshot in file, when its data dir holds no member yet.
func restoreEtcdSnapshot(file string, etcdArgs []string) (string, error) {
	dataDir, member, err := backup.MemberFromEtcdArgs(etcdArgs)
	if err != nil {
		return "", err
	}
	if msg, ok := memberHasData(dataDir, member); ok {
		return msg, nil
	}
	snapshot, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("etcd snapshot: %w", err)
	}
	if err := restoreIntoDataDir(snapshot, dataDir, member); err != nil {
		return "", err
	}
	return fmt.Sprintf("etcd member %s: restored %s (%d bytes of snapshot)", member.Name, dataDir, len(snapshot)), nil
}

// restoreEtcdData restores the etcd member the flags describe from the
// archive named in fromDir, when that directory holds one and the data dir
// holds no member yet; it never touches data etcd has written. It says
// what it did.
func restoreEtcdData(ctx context.Context, fromDir string, etcdArgs []string) (string, error) {
	if fromDir == "" {
		return "", errors.New("--from-dir is required: the directory of the restore Secret")
	}
	dataDir, member, err := backup.MemberFromEtcdArgs(etcdArgs)
	if err != nil {
		return "", err
	}
	rawURL, err := os.ReadFile(filepath.Join(fromDir, runtime.RestoreURLFile))
	if errors.Is(err, os.ErrNotExist) {
		return "nothing to restore: " + fromDir + " holds no archive URL (the restore is done or was never asked for)", nil
	}
	if err != nil {
		return "", fmt.Errorf("restore Secret: %w", err)
	}
	if msg, ok := memberHasData(dataDir, member); ok {
		return msg, nil
	}
	secretData, err := readSecretDir(fromDir)
	if err != nil {
		return "", err
	}
	key, creds, err := backup.FromSecretData(secretData)
	if err != nil {
		return "", fmt.Errorf("restore Secret in %s: %w", fromDir, err)
	}
	archiveURL := strings.TrimSpace(string(rawURL))
	a, err := backup.Fetch(ctx, archiveURL, key, creds)
	if err != nil {
		return "", err
	}
	snapshot := a.Files[backup.EtcdSnapshotEntry]
	if len(snapshot) == 0 {
		return "", fmt.Errorf("archive %s has no %s", archiveURL, backup.EtcdSnapshotEntry)
	}
	if err := restoreIntoDataDir(snapshot, dataDir, member); err != nil {
		return "", err
	}
	return fmt.Sprintf("etcd member %s: restored %s from %s (%d bytes of snapshot, cluster %s, made %s)",
		member.Name, dataDir, archiveURL, len(snapshot), a.Manifest.Cluster, a.Manifest.Created), nil
}

// memberHasData says whether dataDir holds an etcd member already — data
// etcd has written, which a restore never touches — and what to report.
func memberHasData(dataDir string, member backup.RestoreMember) (string, bool) {
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err != nil {
		return "", false
	}
	return fmt.Sprintf("etcd member %s: %s holds data already; left as it is", member.Name, dataDir), true
}

// restoreIntoDataDir restores into dataDir, which may exist (a volume's
// mount point, which cannot be replaced): the data is made in a directory
// of its own inside it and its member directory moved into place last, so
// an interrupted restore leaves no member behind and is done again.
func restoreIntoDataDir(snapshot []byte, dataDir string, m backup.RestoreMember) error {
	if _, err := os.Stat(dataDir); errors.Is(err, os.ErrNotExist) {
		return backup.RestoreDataDir(snapshot, dataDir, m)
	}
	parent, err := os.MkdirTemp(dataDir, ".restore-")
	if err != nil {
		return fmt.Errorf("restore into %s: %w", dataDir, err)
	}
	defer os.RemoveAll(parent)
	// RestoreDataDir makes its target itself.
	work := filepath.Join(parent, "data")
	if err := backup.RestoreDataDir(snapshot, work, m); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(work, "member"), filepath.Join(dataDir, "member")); err != nil {
		return fmt.Errorf("move the restored member into %s: %w", dataDir, err)
	}
	return nil
}

// readSecretDir reads a mounted Secret's files (its keys), leaving out the
// kubelet's own entries (..data and the timestamped directory).
func readSecretDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restore Secret: %w", err)
	}
	data := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("restore Secret: %w", err)
		}
		content, err := io.ReadAll(io.LimitReader(f, 1<<20))
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("restore Secret file %s: %w", e.Name(), err)
		}
		data[e.Name()] = content
	}
	return data, nil
}
