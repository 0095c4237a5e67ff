package machine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hypershift.dev/internal/runtime/process"
)

// starterHelperEnv makes the test binary a process that starts a machine's
// userdata and then waits to be killed (TestUserdataOutlivesItsStarter).
const starterHelperEnv = "HYPERSHIFT_MACHINE_TEST_STARTER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(starterHelperEnv); spec != "" {
		dir, name, _ := strings.Cut(spec, "\n")
		if _, err := (Host{Dir: dir}).StartUserdata(name, []byte("sleep 1\necho run >> /var/lib/runs\necho done\n")); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("started")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if dir := os.Getenv(bootHelperEnv); dir != "" {
		os.Exit(bootHelper(dir))
	}
	os.Exit(m.Run())
}

// waitUserdata waits until the machine's userdata is no longer running.
func waitUserdata(t *testing.T, h Host, name string) UserdataStatus {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := h.Userdata(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != UserdataRunning || time.Now().After(deadline) {
			return st
		}
	}
}

func runs(t *testing.T, h Host, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.rootDir(name), "var-lib", "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// A detached userdata runs in the machine, in a session of its own, with
// the provider ID and none of the caller's environment; its end is
// recorded; it runs once however often it is started; a failing one
// records its exit status and its log says why.
func TestDetachedUserdata(t *testing.T) {
	h, _ := testHost(t)
	t.Setenv("HYPERSHIFT_TEST_CALLER_ONLY", "leaked")
	r, err := h.Make("d1", "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("d1"); got.Owner != "uid-1" {
		t.Errorf("record's owner %q, want uid-1", got.Owner)
	}
	if st, err := h.Userdata("d1"); err != nil || st.State != UserdataNotStarted {
		t.Fatalf("userdata of a machine just made: %+v, %v; want NotStarted", st, err)
	}
	script := []byte("echo run >> /var/lib/runs\nhostname\necho \"id=$" + ProviderIDEnv + " caller=${HYPERSHIFT_TEST_CALLER_ONLY:-none}\"\nsleep 1\n")
	st, err := h.StartUserdata("d1", script)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != UserdataRunning {
		t.Fatalf("right after the start: %+v, want Running", st)
	}
	rec := readUserdataRecord(t, h, "d1")
	fields, err := process.StatFields(rec.PID)
	if err != nil {
		t.Fatal(err)
	}
	// fields[3] is field 6 of /proc/PID/stat, the session.
	if fields[3] != strconv.Itoa(rec.PID) {
		t.Errorf("the starter (pid %d) is in session %s, want a session of its own", rec.PID, fields[3])
	}
	if _, err := h.StartUserdata("d1", script); err != nil {
		t.Fatal(err)
	}
	st = waitUserdata(t, h, "d1")
	if st.State != UserdataSucceeded || st.ExitCode != 0 {
		t.Errorf("after it ended: %+v, want Succeeded with status 0", st)
	}
	if _, err := h.StartUserdata("d1", script); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := runs(t, h, "d1"); n != 1 {
		t.Errorf("the userdata ran %d times after three starts, want once", n)
	}
	log, _ := os.ReadFile(h.UserdataLog("d1"))
	if want := "d1\nid=" + r.ProviderID() + " caller=none\n"; string(log) != want {
		t.Errorf("userdata log %q, want %q (its hostname, its provider ID, nothing of the caller's environment)", log, want)
	}

	if _, err := h.Make("d2", "uid-2"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 300)
	if _, err := h.StartUserdata("d2", []byte("echo "+long+"\necho first\necho why it failed >&2\nexit 7\n")); err != nil {
		t.Fatal(err)
	}
	st = waitUserdata(t, h, "d2")
	if st.State != UserdataFailed || st.ExitCode != 7 {
		t.Errorf("a userdata that exits 7: %+v, want Failed with status 7", st)
	}
	if tail := h.UserdataLogTail("d2", 100); tail != "first\nwhy it failed" {
		t.Errorf("log tail %q, want its last whole lines within 100 bytes", tail)
	}
}

func readUserdataRecord(t *testing.T, h Host, name string) userdataRecord {
	t.Helper()
	data, err := os.ReadFile(h.userdataRecordPath(name))
	if err != nil {
		t.Fatal(err)
	}
	var rec userdataRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// The userdata runs on after the process that started it is killed (an
// operator restarting), its end is recorded, and a later start by another
// process does not run it again.
func TestUserdataOutlivesItsStarter(t *testing.T) {
	h, _ := testHost(t)
	if _, err := h.Make("s1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), starterHelperEnv+"="+h.Dir+"\ns1")
	helper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("the starting process said %q", line)
	}
	// Its whole process group, as a supervisor stops it.
	if err := syscall.Kill(-helper.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if st, err := h.Userdata("s1"); err != nil || st.State != UserdataRunning {
		t.Errorf("after the starting process was killed: %+v, %v; want Running", st, err)
	}
	if _, err := h.StartUserdata("s1", []byte("echo run >> /var/lib/runs\n")); err != nil {
		t.Fatal(err)
	}
	if st := waitUserdata(t, h, "s1"); st.State != UserdataSucceeded {
		t.Errorf("after it ended: %+v, want Succeeded", st)
	}
	if n := runs(t, h, "s1"); n != 1 {
		t.Errorf("the userdata ran %d times, want once", n)
	}
	if log, _ := os.ReadFile(h.UserdataLog("s1")); string(log) != "done\n" {
		t.Errorf("userdata log %q, want the first userdata's output only", log)
	}
}

// Whether a userdata runs is told by its starter's pid, start time and
// command line, never by a pid alone: a record edited to name another
// process (with a wrong start time, or with its own) reads as not
// running, and deleting the machine leaves that process alone; the
// recorded starter of a running userdata is stopped by the deletion.
func TestUserdataLivenessIsNotABarePid(t *testing.T) {
	h, _ := testHost(t)
	outside := exec.Command("sleep", "600")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = outside.Process.Kill(); _ = outside.Wait() })
	outsideStart, err := process.StartTime(outside.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Make("l1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartUserdata("l1", []byte("exec sleep 600\n")); err != nil {
		t.Fatal(err)
	}
	real := readUserdataRecord(t, h, "l1")
	for _, edit := range []struct {
		what string
		rec  userdataRecord
	}{
		{"the starter's pid with another start time", userdataRecord{PID: real.PID, StartTime: real.StartTime + 1}},
		{"another process's pid with its start time", userdataRecord{PID: outside.Process.Pid, StartTime: outsideStart}},
	} {
		if err := writeUserdataRecord(h.userdataRecordPath("l1"), edit.rec); err != nil {
			t.Fatal(err)
		}
		if st, err := h.Userdata("l1"); err != nil || st.State == UserdataRunning {
			t.Errorf("a record naming %s: %+v, %v; want not Running", edit.what, st, err)
		}
	}
	if err := writeUserdataRecord(h.userdataRecordPath("l1"), real); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.Userdata("l1"); st.State != UserdataRunning {
		t.Errorf("the record put back: %+v, want Running", st)
	}

	// A machine whose userdata ended, its record edited to name the
	// outside process as it is.
	if _, err := h.Make("l2", "uid-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.StartUserdata("l2", []byte("true\n")); err != nil {
		t.Fatal(err)
	}
	waitUserdata(t, h, "l2")
	if err := writeUserdataRecord(h.userdataRecordPath("l2"), userdataRecord{PID: outside.Process.Pid, StartTime: outsideStart}); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteOwned(t.Context(), "l2", "uid-2", nil); err != nil {
		t.Fatal(err)
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("deleting a machine whose record names an outside process killed it: %v", err)
	}
	if err := h.DeleteOwned(t.Context(), "l1", "uid-1", nil); err != nil {
		t.Fatal(err)
	}
	if st, err := process.StartTime(real.PID); err == nil && st == real.StartTime {
		t.Errorf("the starter of a deleted machine's userdata (pid %d) runs on", real.PID)
	}
}

// A machine is deleted for an owner only when its record names that
// owner: one of another owner, one made by hand (no owner), one whose
// record was edited to name another owner, and an empty owner are refused
// and the machine is left whole.
func TestDeleteOwnedActsOnlyOnTheOwnersMachine(t *testing.T) {
	h, _ := testHost(t)
	if _, err := h.Make("o1", "uid-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Create(t.Context(), "o2", []byte("true\n"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Make("o1", "uid-a"); !errors.Is(err, ErrExists) {
		t.Errorf("a second o1: %v, want ErrExists", err)
	}
	if _, err := h.Get("none"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a machine that is not there: %v, want ErrNotFound", err)
	}
	refused := func(name, owner string) {
		t.Helper()
		if err := h.DeleteOwned(t.Context(), name, owner, nil); !errors.Is(err, ErrNotOwner) {
			t.Errorf("delete %s for owner %q: %v, want ErrNotOwner", name, owner, err)
		}
		if err := h.Check(name); err != nil {
			t.Errorf("%s after a refused delete: %v", name, err)
		}
	}
	refused("o1", "uid-b")
	refused("o1", "")
	refused("o2", "uid-a") // made by hand
	r, _ := h.Get("o1")
	edited := r
	edited.Owner = "uid-c"
	if err := h.save(edited); err != nil {
		t.Fatal(err)
	}
	refused("o1", "uid-a")
	if err := h.save(r); err != nil {
		t.Fatal(err)
	}
	if err := h.DeleteOwned(t.Context(), "o1", "uid-a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Get("o1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("o1 after its owner deleted it: %v", err)
	}
}

// A machine whose namespaces went (a host restart drops their mounts) is
// not whole, and Delete still removes it.
func TestCheckFindsAMachineWithoutItsNamespaces(t *testing.T) {
	h, _ := testHost(t)
	if _, err := h.Make("c1", "uid-1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Check("c1"); err != nil {
		t.Fatal(err)
	}
	if err := h.unpin("c1"); err != nil {
		t.Fatal(err)
	}
	if err := h.Check("c1"); err == nil || !strings.Contains(err.Error(), "namespace is gone") {
		t.Errorf("a machine without its namespaces: %v, want not whole", err)
	}
	if err := h.DeleteOwned(t.Context(), "c1", "uid-1", nil); err != nil {
		t.Fatal(err)
	}
}
