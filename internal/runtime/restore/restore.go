// Package restore fills one etcd member's empty data dir from a backup
// archive: the one implementation of the restore step both runtimes run
// before an instance with a Restore first starts — the kube runtime in an
// init container of the member's pod, the process runtime in a child
// process before it starts the member (`hypershift restore etcd-data`,
// which calls Member). A snapshot is the tenant's data, so it is always
// opened in a process of its own, never in the operator.
package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/runtime"
)

// Member restores the etcd member the flags describe from the archive
// named in fromDir — the files of the instance's Restore: the archive's
// URL (runtime.RestoreURLFile), its key and the bucket's credentials, and
// where file:// archives may be (runtime.RestoreFileRootFile; without it,
// file:// is refused) — when fromDir holds one and the data dir holds no
// member yet. It never touches data etcd has written, and says what it did.
func Member(ctx context.Context, fromDir string, etcdArgs []string) (string, error) {
	if fromDir == "" {
		return "", errors.New("the directory of the restore's files is required")
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
		return "", fmt.Errorf("restore files: %w", err)
	}
	if msg, ok := memberHasData(dataDir, member); ok {
		return msg, nil
	}
	files, err := readDir(fromDir)
	if err != nil {
		return "", err
	}
	archiveURL := strings.TrimSpace(string(rawURL))
	root, hostFiles := files[runtime.RestoreFileRootFile]
	if err := backup.CheckArchiveURL(archiveURL, strings.TrimSpace(string(root)), !hostFiles); err != nil {
		return "", err
	}
	delete(files, runtime.RestoreFileRootFile)
	key, creds, err := backup.FromSecretData(files)
	if err != nil {
		return "", fmt.Errorf("restore files in %s: %w", fromDir, err)
	}
	ctx, cancel := context.WithTimeout(ctx, backup.FetchTimeout)
	defer cancel()
	a, err := backup.Fetch(ctx, archiveURL, key, creds)
	if err != nil {
		return "", err
	}
	snapshot := a.Files[backup.EtcdSnapshotEntry]
	if len(snapshot) == 0 {
		return "", fmt.Errorf("archive %s has no %s", archiveURL, backup.EtcdSnapshotEntry)
	}
	if err := intoDataDir(snapshot, dataDir, member); err != nil {
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

// intoDataDir restores into dataDir, which may exist (a volume's mount
// point, which cannot be replaced): the data is made in a directory of its
// own inside it and its member directory moved into place last, so an
// interrupted restore leaves no member behind and is done again.
func intoDataDir(snapshot []byte, dataDir string, m backup.RestoreMember) error {
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

// readDir reads the restore's files: a mounted Secret's keys, leaving out
// the kubelet's own entries (..data and the timestamped directory), or the
// files the process runtime wrote; each at most 1 MiB.
func readDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("restore files: %w", err)
	}
	data := map[string][]byte{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("restore files: %w", err)
		}
		content, err := io.ReadAll(io.LimitReader(f, 1<<20))
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("restore file %s: %w", e.Name(), err)
		}
		data[e.Name()] = content
	}
	return data, nil
}
