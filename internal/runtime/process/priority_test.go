package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// niceOf reads field 19 of /proc/PID/stat (after the command's closing
// parenthesis, which may itself hold spaces).
func niceOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	n, err := strconv.Atoi(fields[16]) // field 19 counted from the state (field 3)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNiceLowersOnlyItsOwnProcesses: a runtime with Nice starts its
// processes with that nice value (and their session's autogroup, where the
// kernel has one); a runtime without it leaves the priority as inherited;
// the test's own process is untouched; an out-of-range value is refused.
func TestNiceLowersOnlyItsOwnProcesses(t *testing.T) {
	own := niceOf(t, os.Getpid())
	if own > 19-7 {
		t.Skipf("this test runs at nice %d already; it needs room to lower the priority by 7", own)
	}
	start := func(nice int) int {
		root := testenv.ShortTempDir(t)
		rt, err := process.New(process.Options{Root: root, Binary: testenv.Binary(t), Log: testenv.Logger(), Nice: nice})
		if err != nil {
			t.Fatal(err)
		}
		ref := runtime.ControlPlaneRef{Namespace: "nice-" + strconv.Itoa(nice)}
		t.Cleanup(func() { rt.Stop(context.Background(), ref) })
		if err := rt.Apply(context.Background(), ref, []runtime.Spec{etcdSpec(t, filepath.Join(root, ref.Namespace))}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "etcd running", running(rt, ref))
		return status(rt, ref).PID
	}
	lowered, plain := start(own+7), start(0)
	if got := niceOf(t, lowered); got != own+7 {
		t.Errorf("process of a runtime with Nice %d runs at nice %d", own+7, got)
	}
	if got := niceOf(t, plain); got != own {
		t.Errorf("process of a runtime without Nice runs at nice %d, want the inherited %d", got, own)
	}
	if got := niceOf(t, os.Getpid()); got != own {
		t.Errorf("the runtime changed its own process's nice to %d", got)
	}
	if data, err := os.ReadFile("/proc/" + strconv.Itoa(lowered) + "/autogroup"); err == nil {
		if !strings.Contains(string(data), "nice "+strconv.Itoa(own+7)) {
			t.Errorf("autogroup of the lowered process: %q, want nice %d", data, own+7)
		}
	} else {
		t.Logf("no autogroup on this kernel (%v): the nice value alone counts", err)
	}
	if _, err := process.New(process.Options{Root: t.TempDir(), Nice: 20}); err == nil || !strings.Contains(err.Error(), "nice 20: use 0 to 19") {
		t.Errorf("Nice 20: %v, want refused", err)
	}
}
