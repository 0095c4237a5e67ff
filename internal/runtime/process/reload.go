package process

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/runtime"
)

// fileMode is the mode a spec's file is written with.
func fileMode(f runtime.File) os.FileMode {
	if f.Secret {
		return 0o600
	}
	return 0o644
}

// reloadableChanged says whether the content of a Reloadable file differs
// between two specs of equal hash.
func reloadableChanged(before, after runtime.Spec) bool {
	old := map[string][]byte{}
	for _, f := range before.Files {
		if f.Reloadable {
			old[f.Path] = f.Content
		}
	}
	for _, f := range after.Files {
		if f.Reloadable && !bytes.Equal(old[f.Path], f.Content) {
			return true
		}
	}
	return false
}

// writeReloadable replaces the Reloadable files of the current spec in
// the instance directory while the process runs: a renewed certificate
// reaches a component that re-reads it without a restart. Every file is
// written to a temporary name first and the renames follow one another,
// so a certificate and its key are out of step for as short a time as
// two renames take; each file is always whole. Only files that differ are
// touched, so a watcher sees no change when there is none.
func (in *instance) writeReloadable() error {
	in.files.Lock()
	defer in.files.Unlock()
	spec := in.currentSpec()
	type pending struct{ tmp, path string }
	var renames []pending
	defer func() {
		for _, p := range renames {
			_ = os.Remove(p.tmp)
		}
	}()
	for _, f := range spec.Files {
		if !f.Reloadable {
			continue
		}
		path := filepath.Join(in.dir, f.Path)
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, f.Content) {
			continue
		}
		tmp, err := writeTemp(path, f.Content, fileMode(f))
		if err != nil {
			return err
		}
		renames = append(renames, pending{tmp, path})
	}
	for i, p := range renames {
		if err := os.Rename(p.tmp, p.path); err != nil {
			return fmt.Errorf("replace %s: %w", p.path, err)
		}
		renames[i].tmp = "" // renamed: nothing to remove
	}
	if len(renames) > 0 {
		in.log.Info("replaced reloadable files in place", "files", len(renames))
	}
	return nil
}

func writeTemp(path string, data []byte, mode os.FileMode) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.WriteTemp(path, data, mode)
}
