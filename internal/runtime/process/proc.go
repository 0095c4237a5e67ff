package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartTime returns the start time of pid in clock ticks since boot: with
// the pid, it identifies a process (see procStartTime).
func StartTime(pid int) (uint64, error) { return procStartTime(pid) }

// procStartTime returns the start time of pid in clock ticks since boot
// (field 22 of /proc/PID/stat), which together with the pid identifies a
// process: pids are reused, start times are not.
func procStartTime(pid int) (uint64, error) {
	fields, err := StatFields(pid)
	if err != nil {
		return 0, err
	}
	// fields[0] is field 3 (state); start time is field 22.
	if len(fields) < 20 {
		return 0, errors.New("short /proc stat")
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, errors.New("process exited")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

// StatFields returns the fields of /proc/PID/stat from field 3 (state) on:
// fields[n-3] is field n of proc(5).
func StatFields(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// The command name (field 2) may hold spaces and parentheses; the fields
	// after the last ')' are plain.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, errors.New("malformed /proc stat")
	}
	return strings.Fields(string(data[i+1:])), nil
}

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// bootRelativeTime turns a start time in clock ticks since boot into wall
// time, with the boot time of /proc/stat (whole seconds).
func bootRelativeTime(ticks uint64) (time.Time, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			btime, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("boot time in /proc/stat: %w", err)
			}
			return time.Unix(btime, 0).Add(time.Duration(ticks) * time.Second / clockTicks), nil //nolint:gosec // ticks since boot fit
		}
	}
	return time.Time{}, errors.New("no btime in /proc/stat")
}

// alive reports whether pid still is the process that started at startTime.
func alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	st, err := procStartTime(pid)
	return err == nil && st == startTime
}

// signalGroup signals the process group led by pid, or pid alone when it
// leads no group (a foreground `hypershift up` started from a shell).
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = syscall.Kill(pid, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// terminate stops the process group led by pid: SIGTERM, then SIGKILL after
// grace. It returns once pid is gone.
func terminate(pid int, startTime uint64, grace time.Duration) error {
	if !alive(pid, startTime) {
		return nil
	}
	if err := signalGroup(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid, startTime) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := signalGroup(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill pid %d: %w", pid, err)
	}
	for range 100 {
		if !alive(pid, startTime) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pid %d did not exit after SIGKILL", pid)
}

// Terminate stops the process group led by pid (SIGTERM, then SIGKILL after
// grace) and returns once it is gone.
func Terminate(pid int, startTime uint64, grace time.Duration) error {
	return terminate(pid, startTime, grace)
}
