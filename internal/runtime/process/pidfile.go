package process

import (
	"encoding/json"
	"errors"
	"os"
	"time"

	"hypershift.dev/internal/atomicfile"
)

// pidRecord is what a running instance leaves on disk so that a later
// operator can find and adopt it.
type pidRecord struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"startTime"`
	// Hash is the spec hash the process was started with.
	Hash string `json:"hash"`
	// StartedAt is when the process was started, reported again by an
	// operator that adopts it. Records written before it existed fall
	// back to the start time the kernel keeps.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// StopLast is the spec's: the instance is stopped after the others.
	StopLast bool `json:"stopLast,omitempty"`
}

// startedAt returns when the recorded process started.
func (rec pidRecord) startedAt() time.Time {
	if rec.StartedAt != nil {
		return *rec.StartedAt
	}
	t, err := bootRelativeTime(rec.StartTime)
	if err != nil {
		return time.Now()
	}
	return t
}

func readPidRecord(path string) (pidRecord, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return pidRecord{}, false
	}
	var rec pidRecord
	if json.Unmarshal(data, &rec) != nil || rec.PID <= 0 {
		return pidRecord{}, false
	}
	return rec, true
}

func writePidRecord(path string, rec pidRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

func removePidRecord(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// RecordSelf writes a pid file naming the calling process.
func RecordSelf(path string) error {
	pid := os.Getpid()
	st, err := procStartTime(pid)
	if err != nil {
		return err
	}
	return writePidRecord(path, pidRecord{PID: pid, StartTime: st})
}

// LivePID returns the process a pid file names, if it is still running.
func LivePID(path string) (pid int, startTime uint64, ok bool) {
	rec, found := readPidRecord(path)
	if !found || !alive(rec.PID, rec.StartTime) {
		return 0, 0, false
	}
	return rec.PID, rec.StartTime, true
}

// RemovePIDFile removes a pid file; a missing one is not an error.
func RemovePIDFile(path string) error { return removePidRecord(path) }
