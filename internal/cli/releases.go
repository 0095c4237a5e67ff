package cli

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"hypershift.dev/internal/release"
)

// releasesFlag is --releases-dir of the commands that run control planes.
type releasesFlag struct {
	dir string
}

func (r *releasesFlag) add(f *pflag.FlagSet) {
	f.StringVar(&r.dir, "releases-dir", "", "directory of the Kubernetes releases besides the compiled-in one, <dir>/<version>/kubernetes (default: releases beside the hypershift binary; see docs/releases.md)")
}

// load returns the catalog: the compiled-in release and every checked
// release of the directory. A directory given explicitly must exist.
func (r *releasesFlag) load() (*release.Catalog, error) {
	dir := r.dir
	if dir == "" {
		dir = release.DefaultDir()
	} else if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--releases-dir %s: %w", dir, err)
	}
	c, err := release.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("--releases-dir: %w", err)
	}
	return c, nil
}
