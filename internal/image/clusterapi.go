package image

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"

	"hypershift.dev/internal/clusterapi"
)

// clusterAPIEntries are ClusterAPIDir with the manager binary of dir and
// its CRDs, or nothing when dir does not exist and is not required.
func clusterAPIEntries(dir string, required bool) ([]entry, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) && !required {
		return nil, nil
	}
	m := clusterapi.Manager{Dir: dir}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("the image's Cluster API manager: %w", err)
	}
	if err := checkStatic(m.Path()); err != nil {
		return nil, err
	}
	info, err := os.Stat(m.Path())
	if err != nil {
		return nil, err
	}
	crds, err := filepath.Glob(filepath.Join(m.CRDDir(), "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(crds)
	base := ClusterAPIDir[1:]
	out := []entry{
		{path: base + "/", mode: 0o755, dir: true},
		{path: path.Join(base, clusterapi.BinaryName), mode: 0o755, src: m.Path(), size: info.Size()},
		{path: path.Join(base, clusterapi.CRDDirName) + "/", mode: 0o755, dir: true},
	}
	for _, crd := range crds {
		info, err := os.Stat(crd)
		if err != nil {
			return nil, err
		}
		out = append(out, entry{path: path.Join(base, clusterapi.CRDDirName, filepath.Base(crd)), mode: 0o644, src: crd, size: info.Size()})
	}
	return out, nil
}
