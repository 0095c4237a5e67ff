package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// CheckFileRoot confines a file:// archive URL to root, the directory the
// operator's admin gave for archives (--backup-file-root): whoever writes a
// HostedCluster names the URL, and must not have the operator read or
// write a file anywhere else it can. The path must be clean and inside
// root, and nothing on the way from root to the file, nor the file, may be
// a symbolic link or other than a directory (the file: a regular file).
// An empty root refuses every file:// URL. Other schemes pass.
func CheckFileRoot(raw, root string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" {
		return nil // not a file:// URL: ParseURL judges it
	}
	if root == "" {
		return fmt.Errorf("archive %s: file:// archives are not enabled on this operator: its admin names a directory for them with --backup-file-root", raw)
	}
	p := u.Path
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("archive %s: want a clean absolute path inside %s (no .., no //)", raw, root)
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("archive %s is outside %s, the directory the operator keeps file:// archives in (--backup-file-root)", raw, root)
	}
	cur := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // made by the write, inside root
		}
		if err != nil {
			return fmt.Errorf("archive %s: %w", raw, err)
		}
		last := i == len(parts)-1
		if fi.Mode()&fs.ModeSymlink != 0 || (!last && !fi.IsDir()) || (last && !fi.Mode().IsRegular()) {
			return fmt.Errorf("archive %s: %s is a %s: an archive path inside %s holds directories and the archive only", raw, cur, fileKind(fi.Mode()), root)
		}
	}
	return nil
}

// CheckArchiveURL refuses an archive URL that an operator cannot or may
// not use: with pods (the kube runtime), any file:// URL — it would name a
// path in the operator's and the control plane's pods' own file systems,
// where no archive is; else a file:// URL outside fileRoot (CheckFileRoot).
func CheckArchiveURL(raw, fileRoot string, pods bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("archive URL %q: %w", raw, err)
	}
	if u.Scheme != "file" {
		return nil
	}
	if pods {
		return fmt.Errorf("archive URL %s: file:// names a path in the operator's pod (and, to restore, in etcd's pods) on the kube runtime (hypershift install), where no archive is; use a bucket they reach (s3://BUCKET/KEY?…)", raw)
	}
	return CheckFileRoot(raw, fileRoot)
}
