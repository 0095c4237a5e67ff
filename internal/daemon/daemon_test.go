package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The test binary doubles as the background child: with
// DAEMON_TEST_CHILD=ready it records itself and waits to be stopped, with
// =fail it says why and exits 3.
func TestMain(m *testing.M) {
	switch os.Getenv("DAEMON_TEST_CHILD") {
	case "ready":
		if err := PIDFile(os.Getenv("DAEMON_TEST_PIDFILE")).RecordSelf(); err != nil {
			os.Exit(2)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	case "fail":
		fmt.Println("cannot start: port in use")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func TestPIDFileNamesOnlyTheRecordedProcess(t *testing.T) {
	f := PIDFile(filepath.Join(t.TempDir(), "x.pid"))
	if _, ok := f.Live(); ok {
		t.Fatal("a missing pid file names a live process")
	}
	if err := f.RecordSelf(); err != nil {
		t.Fatal(err)
	}
	if pid, ok := f.Live(); !ok || pid != os.Getpid() {
		t.Fatalf("Live() = %d, %v; want %d, true", pid, ok, os.Getpid())
	}
	// Same pid, other start time: a reused pid is not the recorded process.
	raw, err := os.ReadFile(string(f))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	rec["startTime"] = 1
	raw, _ = json.Marshal(rec)
	if err := os.WriteFile(string(f), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Live(); ok {
		t.Error("a pid file with another start time names this process")
	}
	if _, stopped, err := f.Stop(time.Second); stopped || err != nil {
		t.Errorf("Stop of a reused pid = %v, %v; want nothing stopped", stopped, err)
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove(); err != nil {
		t.Errorf("removing a missing pid file: %v", err)
	}
}

func TestStartRunsInItsOwnSessionAndLogs(t *testing.T) {
	log := filepath.Join(t.TempDir(), "child.log")
	// The test binary with no test to run exits 0 after printing "ok"-ish
	// output into the log.
	child, err := Start(log, []string{"DAEMON_TEST=1"}, "-test.run=^$", "-test.v")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-child.Exited:
		if err != nil {
			t.Fatalf("child exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("child did not exit")
	}
	if info, err := os.Stat(log); err != nil || info.Size() == 0 {
		t.Errorf("log %s: %v, want the child's output", log, err)
	}
}

func TestStartReadyWaitsForThePIDFile(t *testing.T) {
	dir := t.TempDir()
	pidFile := PIDFile(filepath.Join(dir, "child.pid"))
	log := filepath.Join(dir, "child.log")
	env := []string{"DAEMON_TEST_CHILD=ready", "DAEMON_TEST_PIDFILE=" + string(pidFile)}
	child, err := StartReady(t.Context(), "test child", pidFile, 30*time.Second, log, env)
	if err != nil {
		t.Fatal(err)
	}
	pid, ok := pidFile.Live()
	if !ok || pid != child.PID {
		t.Errorf("pid file names %d (%v), want the child %d", pid, ok, child.PID)
	}
	if _, stopped, err := pidFile.Stop(5 * time.Second); !stopped || err != nil {
		t.Errorf("Stop = %v, %v; want the child stopped", stopped, err)
	}
}

func TestStartReadyReportsAnExitWithTheLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "child.log")
	_, err := StartReady(t.Context(), "test child", PIDFile(filepath.Join(dir, "child.pid")), 30*time.Second, log, []string{"DAEMON_TEST_CHILD=fail"})
	if err == nil || !strings.Contains(err.Error(), "test child exited (exit status 3); last lines of "+log) ||
		!strings.Contains(err.Error(), "cannot start: port in use") {
		t.Fatalf("StartReady of a failing child = %v, want its exit and its last log lines", err)
	}
}

func TestStartReadyTimesOut(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "child.log")
	// Records itself elsewhere: never ready as far as this pid file goes.
	env := []string{"DAEMON_TEST_CHILD=ready", "DAEMON_TEST_PIDFILE=" + filepath.Join(dir, "other.pid")}
	_, err := StartReady(t.Context(), "test child", PIDFile(filepath.Join(dir, "child.pid")), 500*time.Millisecond, log, env)
	if err == nil || err.Error() != "test child not ready after 500ms; see "+log {
		t.Fatalf("StartReady = %v, want a timeout naming the log", err)
	}
	other := PIDFile(filepath.Join(dir, "other.pid"))
	_ = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, ok := other.Live()
		return ok, nil
	})
	if _, stopped, err := other.Stop(5 * time.Second); !stopped || err != nil {
		t.Errorf("stop the child: %v, %v", stopped, err)
	}
}
