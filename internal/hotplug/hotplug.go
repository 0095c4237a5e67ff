// Package hotplug is the attachment pod's side of a mirrored volume
// (docs/volumes.md): the pod mounts the management cluster's claim and
// holds a bind mount of it in the machine's hot-plug directory, which the
// pod has with bidirectional mount propagation, so that the mount shows
// on the management node and, through the machine pod's own
// (host-to-container) propagation, inside the machine. The bind lasts
// while the pod runs: when it is stopped the mount is taken away.
package hotplug

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Hold bind-mounts source at dir/name (made if missing) and keeps it until
// ctx ends, then unmounts it and removes the directory. A mount point
// already at dir/name is refused: it is another attachment's. name must
// be one path element.
func Hold(ctx context.Context, source, dir, name string) error {
	if name == "" || name == "." || name == ".." || filepath.Base(name) != name {
		return fmt.Errorf("%q is not a name of one path element", name)
	}
	target := filepath.Join(dir, name)
	if mounted, err := mountinfo.Mounted(target); err == nil && mounted {
		return fmt.Errorf("%s is a mount point already: another attachment holds it", target)
	}
	if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s to %s: %w", source, target, err)
	}
	<-ctx.Done()
	if err := unix.Unmount(target, 0); err != nil {
		// Busy (a process has a file open in it): detach it, so that it
		// goes once the last user lets go. A pod's own bind of the volume
		// (the node plugin's publish) is a mount of its own: it does not
		// make this one busy, and outlives it.
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("unmount %s: %w", target, err)
		}
	}
	return os.Remove(target)
}

// Held reports whether dir/name is a mount point: the attachment pod's
// readiness.
func Held(dir, name string) (bool, error) {
	return mountinfo.Mounted(filepath.Join(dir, name))
}
