// Package daemon runs hypershift in the background — `up --detach` and the
// node daemon `hypershift join` starts — and keeps the pid files that name
// such processes. A pid file records pid and start time, so a later command
// acts on the process it names and never on a reused pid.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"hypershift.dev/internal/runtime/process"
)

// Child is a background process started by Start.
type Child struct {
	PID int
	// Exited reports the child's end.
	Exited <-chan error
	// LogPath holds the child's output.
	LogPath string
}

// LogTail returns the last n lines of the child's output.
func (c *Child) LogTail(n int) string { return process.LogTail(c.LogPath, n) }

// Start starts this binary with args in its own session (it outlives the
// command and the terminal), appending its output to logPath; env is added
// to this process's environment.
func Start(logPath string, env []string, args ...string) (*Child, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...) //nolint:gosec // our own binary
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return &Child{PID: cmd.Process.Pid, Exited: done, LogPath: logPath}, nil
}

// errExited ends the wait for a child that is gone.
var errExited = errors.New("background process exited")

// StartReady starts like Start and returns once the child names itself in
// pidFile — it does that when it is ready —, or an error once it exits or
// timeout passes; what names the child in those errors.
func StartReady(ctx context.Context, what string, pidFile PIDFile, timeout time.Duration, logPath string, env []string, args ...string) (*Child, error) {
	child, err := Start(logPath, env, args...)
	if err != nil {
		return nil, fmt.Errorf("start background %s: %w", what, err)
	}
	var exitErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, false, func(context.Context) (bool, error) {
		select {
		case exitErr = <-child.Exited:
			return false, errExited
		default:
		}
		pid, ok := pidFile.Live()
		return ok && pid == child.PID, nil
	})
	switch {
	case errors.Is(err, errExited):
		return nil, fmt.Errorf("%s exited (%w); last lines of %s:\n%s", what, exitErr, logPath, child.LogTail(15))
	case err != nil:
		return nil, fmt.Errorf("%s not ready after %s; see %s", what, timeout, logPath)
	}
	return child, nil
}

// PIDFile is the path of a pid file naming one running process.
type PIDFile string

// RecordSelf names the calling process in the pid file.
func (f PIDFile) RecordSelf() error { return process.RecordSelf(string(f)) }

// Live returns the process the file names, if it still runs.
func (f PIDFile) Live() (pid int, ok bool) {
	pid, _, ok = process.LivePID(string(f))
	return pid, ok
}

// Stop terminates the process the file names, if it still runs (SIGTERM,
// then SIGKILL after grace), and says which one it was.
func (f PIDFile) Stop(grace time.Duration) (pid int, stopped bool, err error) {
	pid, start, ok := process.LivePID(string(f))
	if !ok {
		return 0, false, nil
	}
	return pid, true, process.Terminate(pid, start, grace)
}

// Remove removes the pid file; a missing one is not an error.
func (f PIDFile) Remove() error { return process.RemovePIDFile(string(f)) }
