package join

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// removeTree removes dir and everything in it without ever leaving dir's
// mount: a directory on another device or mount (a kubelet bind mount of a
// hostPath volume that could not be unmounted, a tmpfs) is left in place and
// reported, never emptied. It works on directory file descriptors (openat
// with O_NOFOLLOW, unlinkat), so a symlink swapped in meanwhile is removed as
// a link and not followed.
func removeTree(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	root, err := mountOf(fd)
	if err != nil {
		_ = unix.Close(fd)
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	errs := removeChildren(fd, dir, root, mountPointSet())
	_ = unix.Close(fd)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// mountID identifies the mount a file is on: its device, and the mount id
// where the kernel reports one (a bind mount of the same file system has
// the same device but another mount id).
type mountID struct {
	dev, mnt uint64
	hasMnt   bool
}

func mountOf(fd int) (mountID, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx); err != nil {
		return mountID{}, err
	}
	return mountID{
		dev:    unix.Mkdev(stx.Dev_major, stx.Dev_minor),
		mnt:    stx.Mnt_id,
		hasMnt: stx.Mask&unix.STATX_MNT_ID != 0,
	}, nil
}

// mountPointSet lists every mount point, for kernels without mount ids.
func mountPointSet() map[string]bool {
	set := map[string]bool{}
	for _, mp := range MountsUnder("/") {
		set[mp] = true
	}
	return set
}

func removeChildren(dirfd int, path string, root mountID, mounts map[string]bool) []error {
	// A duplicate for os.File to own and close: dirfd stays the caller's.
	dup, err := unix.Dup(dirfd)
	if err != nil {
		return []error{fmt.Errorf("read %s: %w", path, err)}
	}
	f := os.NewFile(uintptr(dup), path)
	names, err := f.Readdirnames(-1)
	_ = f.Close()
	if err != nil {
		return []error{fmt.Errorf("read %s: %w", path, err)}
	}
	var errs []error
	for _, name := range names {
		child := filepath.Join(path, name)
		cfd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		switch {
		case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			// A file or symlink: the link itself goes, never its target.
			if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove %s: %w", child, err))
			}
			continue
		case errors.Is(err, unix.ENOENT):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("open %s: %w", child, err))
			continue
		}
		m, err := mountOf(cfd)
		if err == nil && (m.dev != root.dev || (m.hasMnt && root.hasMnt && m.mnt != root.mnt) || mounts[child]) {
			err = fmt.Errorf("%s is another mount or file system: left in place, unmount it and remove it by hand", child)
		}
		if err != nil {
			_ = unix.Close(cfd)
			errs = append(errs, err)
			continue
		}
		sub := removeChildren(cfd, child, root, mounts)
		_ = unix.Close(cfd)
		if len(sub) > 0 {
			errs = append(errs, sub...)
			continue
		}
		if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove %s: %w", child, err))
		}
	}
	return errs
}

// unmountAll unmounts every mount at or below dir, deepest first, and
// reports every one that stays.
func unmountAll(dir string) error {
	var errs []error
	for _, m := range MountsUnder(dir) {
		errs = append(errs, unmount(m))
	}
	return errors.Join(errs...)
}
