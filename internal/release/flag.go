package release

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
)

// DirFlag is --releases-dir of the commands that run control planes (up,
// operator) or say which releases they can run (install, version).
type DirFlag struct {
	// Dir is the directory given; empty means DefaultDir.
	Dir string
}

// AddFlag adds --releases-dir to f.
func (r *DirFlag) AddFlag(f *pflag.FlagSet) {
	f.StringVar(&r.Dir, "releases-dir", "", "directory of the Kubernetes releases besides the compiled-in one, <dir>/<version>/kubernetes (default: releases beside the hypershift binary; see docs/releases.md)")
}

// Load returns the catalog: the compiled-in release and every checked
// release of the directory. A directory given explicitly must exist.
func (r *DirFlag) Load() (*Catalog, error) {
	dir := r.Dir
	if dir == "" {
		dir = DefaultDir()
	} else if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--releases-dir %s: %w", dir, err)
	}
	c, err := Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--releases-dir: %w", err)
	}
	return c, nil
}
