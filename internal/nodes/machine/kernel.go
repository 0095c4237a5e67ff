package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/nodes/join"
)

// kernelStateDir holds the host-wide record of the kernel-wide parameters
// a kubelet sets. It is on /run, a tmpfs: a reboot forgets the record
// and the parameters alike.
var kernelStateDir = "/run/hypershift-machines"

// procSys is where kernel parameters are read and written.
var procSys = "/proc/sys"

// kernelState is the kernel-wide parameters as they were before the first
// machine of this host (of any machines directory), and the machines that
// run now: the last one's deletion puts the parameters back. A node in a
// machine leaves them to this record (each kubelet sets the same values).
type kernelState struct {
	Before  map[string]string `json:"before"`
	Holders []string          `json:"holders"`
}

func lockKernelState() (func(), error) {
	if err := os.MkdirAll(kernelStateDir, 0o700); err != nil {
		return nil, err
	}
	return flock(filepath.Join(kernelStateDir, ".lock"))
}

func kernelStatePath() string { return filepath.Join(kernelStateDir, "kernel.json") }

func readKernelState() (kernelState, error) {
	var s kernelState
	data, err := os.ReadFile(kernelStatePath())
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%s: %w", kernelStatePath(), err)
	}
	return s, nil
}

func writeKernelState(s kernelState) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(kernelStatePath(), data, 0o600)
}

// holdKernel adds the machine (its record's path) to the holders,
// recording the parameters first when it is the first.
func holdKernel(recordPath string) error {
	unlock, err := lockKernelState()
	if err != nil {
		return err
	}
	defer unlock()
	s, err := readKernelState()
	if errors.Is(err, os.ErrNotExist) {
		s = kernelState{Before: join.ReadSysctls(procSys, join.KernelWideSysctls())}
	} else if err != nil {
		return err
	}
	if !slices.Contains(s.Holders, recordPath) {
		s.Holders = append(s.Holders, recordPath)
	}
	return writeKernelState(s)
}

// releaseKernel removes the machine from the holders, and those whose
// record is gone; when none is left it writes the parameters back (those
// join tracks only) and forgets the record.
func releaseKernel(recordPath string) error {
	unlock, err := lockKernelState()
	if err != nil {
		return err
	}
	defer unlock()
	s, err := readKernelState()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	s.Holders = slices.DeleteFunc(s.Holders, func(h string) bool {
		_, err := os.Stat(h)
		return h == recordPath || errors.Is(err, os.ErrNotExist)
	})
	if len(s.Holders) > 0 {
		return writeKernelState(s)
	}
	errs := join.RestoreSysctls(procSys, join.KernelWideSysctls(), s.Before)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.Remove(kernelStatePath())
}
