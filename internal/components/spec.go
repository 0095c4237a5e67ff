// Package components renders the control-plane components (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler) as runtime-neutral
// specs (runtime.Spec): the command line, the files it reads, its ports and
// its health probe. Rendering is pure — the same config gives the same specs
// — so specs are pinned by golden files, and every runtime runs the same
// thing. It also defines the Registry, the one table of the components the
// binary runs (docs/components.md).
package components

import (
	"path/filepath"
)

func path(dir, name, file string) string { return filepath.Join(dir, name, file) }
