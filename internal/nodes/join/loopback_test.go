package join

import (
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// inNewNetns runs f on a thread of its own in a new network namespace (the
// ip commands it starts inherit it); the thread ends with f, so the
// namespace goes with it and the host's lo is never touched.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		goruntime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		f()
	}()
	<-done
}

// Join adds the API server address to lo and reset removes it; an address
// lo had before the join (here with another prefix) stays, as does any
// address when the record predates the field.
func TestLoopbackAddress(t *testing.T) {
	const addr = "172.20.0.1"
	has := func() bool {
		got, err := loopbackAddresses()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(got, addr)
	}
	inNewNetns(t, func() {
		before, err := loopbackAddresses()
		if err != nil {
			t.Error(err)
			return
		}
		for range 2 { // the node daemon ensures it again on each start
			if err := ensureLoopbackAddress(addr); err != nil {
				t.Error(err)
				return
			}
		}
		if !has() {
			t.Errorf("lo lacks %s after ensureLoopbackAddress", addr)
		}
		if err := removeLoopbackAddress(nil, addr); err != nil || !has() {
			t.Errorf("without a record the address must stay: %v", err)
		}
		if err := removeLoopbackAddress(before, addr); err != nil || has() {
			t.Errorf("the address join added stays after reset: %v", err)
		}
	})
	inNewNetns(t, func() {
		if out, err := exec.Command("ip", "addr", "add", addr+"/24", "dev", "lo").CombinedOutput(); err != nil {
			t.Errorf("%v: %s", err, out)
			return
		}
		before, err := loopbackAddresses()
		if err != nil {
			t.Error(err)
			return
		}
		if err := ensureLoopbackAddress(addr); err != nil {
			t.Error(err)
		}
		if err := removeLoopbackAddress(before, addr); err != nil || !has() {
			t.Errorf("an address lo had before the join was removed: %v", err)
		}
		out, _ := exec.Command("ip", "-o", "-4", "addr", "show", "dev", "lo").Output()
		if !slices.Contains(strings.Fields(string(out)), addr+"/24") || slices.Contains(strings.Fields(string(out)), addr+"/32") {
			t.Errorf("lo after reset: %s; want %s/24 alone", out, addr)
		}
	})
}
