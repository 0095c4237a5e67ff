package join

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// removeTree removes a tree but never what is mounted in it: a bind mount
// of a host directory (same file system, another mount) and a tmpfs are
// reported and left whole. Mounting needs root.
func TestRemoveTreeStaysOnItsMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	base := t.TempDir()
	host := filepath.Join(base, "host")
	dir := filepath.Join(base, "node")
	for _, d := range []string{host, filepath.Join(dir, "pods", "bind"), filepath.Join(dir, "pods", "tmp"), filepath.Join(dir, "plain", "deep")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(host, "keep"))
	write(filepath.Join(dir, "plain", "deep", "file"))
	if err := os.Symlink(host, filepath.Join(dir, "plain", "link-to-host")); err != nil {
		t.Fatal(err)
	}
	bind, tmp := filepath.Join(dir, "pods", "bind"), filepath.Join(dir, "pods", "tmp")
	if err := syscall.Mount(host, bind, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(bind, syscall.MNT_DETACH) })
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(tmp, syscall.MNT_DETACH) })
	write(filepath.Join(tmp, "on-tmpfs"))

	err := removeTree(dir)
	if err == nil || !strings.Contains(err.Error(), bind+" is another mount") || !strings.Contains(err.Error(), tmp+" is another mount") {
		t.Errorf("removeTree = %v, want both mounts reported", err)
	}
	for _, p := range []string{filepath.Join(host, "keep"), filepath.Join(bind, "keep"), filepath.Join(tmp, "on-tmpfs")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed through a mount: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "plain")); err == nil {
		t.Error("removeTree left the plain part of the tree")
	}

	// Once unmounted, everything goes.
	if err := unmountAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := removeTree(dir); err != nil {
		t.Fatalf("removeTree after unmounting = %v", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s still there", dir)
	}
	if _, err := os.Stat(filepath.Join(host, "keep")); err != nil {
		t.Errorf("host file removed: %v", err)
	}
	if err := removeTree(dir); err != nil {
		t.Errorf("removeTree of a missing dir = %v", err)
	}
}
