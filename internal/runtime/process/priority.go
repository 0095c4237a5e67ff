package process

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// lowerPriority gives pid, a session leader this runtime has just started,
// the nice value nice (0: nothing). Where the kernel schedules each session
// as a group (autogroup), the group's weight is what counts against other
// sessions, so the group gets the same nice value.
func lowerPriority(pid, nice int) error {
	if nice == 0 {
		return nil
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, pid, nice); err != nil {
		return fmt.Errorf("setpriority of pid %d to %d: %w", pid, nice, err)
	}
	// Absent on kernels built without autogroup; harmless where it is
	// built in but switched off.
	f, err := os.OpenFile(autogroupPath(pid), os.O_WRONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		_, err = f.WriteString(strconv.Itoa(nice))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("autogroup nice of pid %d: %w", pid, err)
	}
	return nil
}

func autogroupPath(pid int) string { return fmt.Sprintf("/proc/%d/autogroup", pid) }
