package machine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bootHelperEnv makes the test binary run Boot as a machine pod's first
// process does, in a process of its own (Boot becomes the subreaper of
// what it starts): DIR/userdata is the userdata, DIR/booted the record,
// and the reset appends "reset" to DIR/resets.
const bootHelperEnv = "HYPERSHIFT_MACHINE_TEST_BOOT"

func bootHelper(dir string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := Boot(ctx, BootOptions{
		Userdata: filepath.Join(dir, "userdata"),
		Booted:   filepath.Join(dir, "booted"),
		Reset:    []string{"sh", "-c", "echo reset >> " + filepath.Join(dir, "resets")},
		Log:      os.Stdout,
	})
	if err != nil {
		fmt.Println("boot:", err)
		return 1
	}
	return 0
}

// boot starts the helper with userdata; its output goes to DIR/log.
func boot(t *testing.T, userdata string) (string, *exec.Cmd) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "userdata"), []byte(userdata), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), bootHelperEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return dir, cmd
}

func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s not written within %s", path, within)
}

func exitCode(t *testing.T, cmd *exec.Cmd, dir string) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("boot did not end within 20s; its log:\n%s", log)
		return -1
	}
}

// zombiesOf lists the zombie children of pid.
func zombiesOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; it ends at the last ')'.
		fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(fields) > 1 && fields[0] == "Z" && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// TestBoot: the userdata succeeds and leaves a daemon in the background,
// as `hypershift join` leaves the node daemon; Boot records the success,
// reaps the daemon once it ends (it inherits it as subreaper: no zombie),
// and when stopped runs the reset once and exits 0.
func TestBoot(t *testing.T) {
	dir, cmd := boot(t, "set -e\n(setsid sh -c 'echo $$ > \"$(dirname \"$0\")/daemon\"; exec sleep 1' \"$0\" &)\necho joined\n")
	waitFile(t, filepath.Join(dir, "booted"), 10*time.Second)
	if err := CheckBooted(filepath.Join(dir, "booted"), &strings.Builder{}); err != nil {
		t.Errorf("CheckBooted after success: %v", err)
	}
	waitFile(t, filepath.Join(dir, "daemon"), 5*time.Second)
	time.Sleep(100 * time.Millisecond)
	daemon, _ := os.ReadFile(filepath.Join(dir, "daemon"))
	if stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(daemon)), "stat")); err != nil {
		t.Fatalf("the userdata's daemon does not run: %v", err)
	} else if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); fields[1] != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("the daemon's parent is %s, want boot (%d): boot is not the subreaper", fields[1], cmd.Process.Pid)
	}
	time.Sleep(2500 * time.Millisecond) // the daemon ends; reaped within the reaper's second
	if z := zombiesOf(cmd.Process.Pid); len(z) > 0 {
		t.Errorf("zombie children of boot: %v: the background daemon it inherited was not reaped", z)
	}
	if _, err := os.Stat(filepath.Join(dir, "resets")); err == nil {
		t.Fatal("the node was reset before the machine was stopped")
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd, dir); code != 0 {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("boot exited %d after SIGTERM, want 0; its log:\n%s", code, log)
	}
	if resets, _ := os.ReadFile(filepath.Join(dir, "resets")); string(resets) != "reset\n" {
		t.Errorf("resets recorded: %q, want one", resets)
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "log")); !strings.Contains(string(log), "joined") {
		t.Errorf("the userdata's output is not in boot's log:\n%s", log)
	}
}

// TestBootUserdataFails: a failing userdata is boot's failure (the pod
// ends Failed); nothing is recorded as booted and nothing is reset.
func TestBootUserdataFails(t *testing.T) {
	dir, cmd := boot(t, "echo cannot join >&2\nexit 3\n")
	if code := exitCode(t, cmd, dir); code != 1 {
		t.Errorf("boot exited %d, want 1", code)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	if !strings.Contains(string(log), "cannot join") || !strings.Contains(string(log), "exit status 3") {
		t.Errorf("boot's log does not end with the userdata's output and status:\n%s", log)
	}
	if err := CheckBooted(filepath.Join(dir, "booted"), &strings.Builder{}); !errors.Is(err, ErrNotBooted) {
		t.Errorf("CheckBooted after a failure: %v, want ErrNotBooted", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "resets")); err == nil {
		t.Error("a node was reset after a userdata that failed")
	}
}

// TestBootStoppedWhileUserdataRuns: stopping the machine during its
// userdata kills the userdata at once and still resets what it may have
// made.
func TestBootStoppedWhileUserdataRuns(t *testing.T) {
	dir, cmd := boot(t, "echo started > "+"\"$(dirname \"$0\")/started\"\nsleep 60\n")
	waitFile(t, filepath.Join(dir, "started"), 10*time.Second)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if code := exitCode(t, cmd, dir); code != 0 {
		t.Errorf("boot exited %d, want 0", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("boot took %s to stop: the userdata was not killed", d)
	}
	if resets, _ := os.ReadFile(filepath.Join(dir, "resets")); string(resets) != "reset\n" {
		t.Errorf("resets recorded: %q, want one", resets)
	}
}
