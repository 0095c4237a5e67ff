package dump

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Write puts the bundle at target: a gzipped tar when target ends in
// .tar.gz or .tgz, else a directory. It never writes over anything: the
// file or directory must not exist yet. Files are readable by their owner
// only (redacted, but still a cluster's inside view).
func (b *Bundle) Write(target string, now time.Time) error {
	if _, err := os.Lstat(target); err == nil {
		return fmt.Errorf("%s exists: name a new file or directory", target)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if strings.HasSuffix(target, ".tar.gz") || strings.HasSuffix(target, ".tgz") {
		return b.writeTarGz(target, now)
	}
	return b.writeDir(target)
}

func (b *Bundle) writeDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	for _, f := range b.Files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (b *Bundle) writeTarGz(path string, now time.Time) (err error) {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path) // our own partial file, created above with O_EXCL
		}
	}()
	gz := gzip.NewWriter(out)
	tw := tar.NewWriter(gz)
	// Everything under one directory, as a tarball of a directory would.
	root := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".gz"), ".tar")
	root = strings.TrimSuffix(root, ".tgz")
	for _, f := range b.Files {
		hdr := &tar.Header{Name: root + "/" + f.Path, Mode: 0o600, Size: int64(len(f.Data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
