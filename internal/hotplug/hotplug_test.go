package hotplug

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hypershift.dev/internal/testenv"
)

// Hold makes the source visible at dir/name while it runs, refuses a name
// that is not one path element and a target another attachment holds, and
// takes the mount and its directory away when stopped, leaving the
// source's data.
func TestHold(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping the attachment's bind mount: it needs root (run the tests as root)")
	}
	base := testenv.ShortTempDir(t)
	source, dir := filepath.Join(base, "claim"), filepath.Join(base, "hotplug")
	for _, d := range []string{source, dir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(source, "data"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "..", "a/b", "../escape"} {
		if err := Hold(t.Context(), source, dir, bad); err == nil {
			t.Errorf("name %q: no error", bad)
		}
	}
	const name = "vol-1"
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Hold(ctx, source, dir, name) }()
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(dir, name), unix.MNT_DETACH) })
	deadline := time.Now().Add(10 * time.Second)
	for held, _ := Held(dir, name); !held; held, _ = Held(dir, name) {
		if time.Now().After(deadline) {
			t.Fatal("not held after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got, err := os.ReadFile(filepath.Join(dir, name, "data")); err != nil || string(got) != "kept" {
		t.Errorf("the claim's data through the attachment: %q, %v", got, err)
	}
	if err := Hold(t.Context(), source, dir, name); err == nil {
		t.Error("a second attachment of a held name: no error")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Hold: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
		t.Errorf("the attachment's directory after it stopped: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(source, "data")); err != nil || string(got) != "kept" {
		t.Errorf("the claim's data after the attachment stopped: %q, %v", got, err)
	}
}
