package machine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/runtime/process"
)

// Files of a machine's directory that say how its detached userdata went.
const (
	userdataRecordFile = "userdata.json"
	userdataExitFile   = "userdata.exit"
)

// UserdataState is how a machine's detached userdata (StartUserdata) is.
type UserdataState string

const (
	// UserdataNotStarted means StartUserdata was never called for the
	// machine.
	UserdataNotStarted UserdataState = "NotStarted"
	// UserdataRunning means it runs.
	UserdataRunning UserdataState = "Running"
	// UserdataSucceeded means it exited with status 0.
	UserdataSucceeded UserdataState = "Succeeded"
	// UserdataFailed means it exited with another status, or did not end
	// by itself (killed; Message says).
	UserdataFailed UserdataState = "Failed"
)

// UserdataStatus is what a machine's directory records of its detached
// userdata.
type UserdataStatus struct {
	State UserdataState
	// ExitCode is the userdata's exit status once it ended by itself (128
	// + the signal when a signal ended it in the machine); -1 when it
	// did not.
	ExitCode int
	// Message says why a userdata that did not end by itself failed.
	Message   string
	StartedAt time.Time
}

// userdataRecord is the detached userdata's starter: a shell on the host,
// in its own session, identified by pid and start time.
type userdataRecord struct {
	StartedAt time.Time `json:"startedAt"`
	PID       int       `json:"pid,omitempty"`
	StartTime uint64    `json:"startTime,omitempty"`
}

// starterScript runs on the host in a session of its own. It waits for the
// go of the process that started it, sent once that one has recorded it
// (pid and start time): a starter nobody recorded runs nothing. It then
// runs the userdata in the machine and records its exit status.
const starterScript = `exit_file=$1; shift
IFS= read -r go
if [ "$go" = go ]; then
	"$@" </dev/null
	status=$?
else
	echo "hypershift: the userdata was not started: the process starting it stopped before recording it"
	status=not-started
fi
printf '%s\n' "$status" >"$exit_file.tmp" && mv -f "$exit_file.tmp" "$exit_file"
`

func (h Host) userdataRecordPath(name string) string {
	return filepath.Join(h.machineDir(name), userdataRecordFile)
}

func (h Host) userdataExitPath(name string) string {
	return filepath.Join(h.machineDir(name), userdataExitFile)
}

// lockMachine holds an exclusive lock on the machine's directory until the
// returned function is called: the userdata's record is written and read
// under it, so a reader never sees a start half-way. A process that dies
// releases it.
func (h Host) lockMachine(name string) (func(), error) {
	fd, err := unix.Open(h.machineDir(name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: h.machineDir(name), Err: err}
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("lock %s: %w", h.machineDir(name), err)
	}
	return func() { _ = unix.Close(fd) }, nil
}

// StartUserdata runs the userdata in the machine detached, once: a starter
// shell in a session of its own on the host runs it there with sh (as
// Create does, with a minimal environment: PATH with the running
// hypershift's directory first, HOME and ProviderIDEnv), its output going
// to UserdataLog, and records its exit status in the machine's directory
// when it ends. It outlives the caller, which does not wait for it. A
// machine whose userdata was started before, by this process or another,
// is not started again: its status is returned.
func (h Host) StartUserdata(name string, userdata []byte) (UserdataStatus, error) {
	r, err := h.Get(name)
	if err != nil {
		return UserdataStatus{}, err
	}
	unlock, err := h.lockMachine(name)
	if err != nil {
		return UserdataStatus{}, err
	}
	defer unlock()
	if _, err := os.Lstat(h.userdataRecordPath(name)); err == nil {
		return h.userdataStatus(name)
	}
	if err := h.writeUserdata(r, userdata); err != nil {
		return UserdataStatus{}, err
	}
	rec := userdataRecord{StartedAt: time.Now().UTC()}
	if err := writeUserdataRecord(h.userdataRecordPath(name), rec); err != nil {
		return UserdataStatus{}, err
	}
	if started, err := h.startStarter(r); err != nil {
		err = fmt.Errorf("machine %s: start its userdata: %w", name, err)
		if !started {
			// Nothing ran: a later call may start it.
			return UserdataStatus{}, errors.Join(err, os.Remove(h.userdataRecordPath(name)))
		}
		// Its starter ends without running it: it is Failed.
		return UserdataStatus{}, err
	}
	return h.userdataStatus(name)
}

// startStarter starts the starter shell, records it and tells it to go;
// started says whether a starter was started.
func (h Host) startStarter(r Record) (started bool, _ error) {
	logFile, err := os.OpenFile(h.UserdataLog(r.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, err
	}
	defer logFile.Close()
	goRead, goWrite, err := os.Pipe()
	if err != nil {
		return false, err
	}
	defer goWrite.Close()
	ns := h.nsDir(r.Name)
	cmd := exec.Command("sh", "-c", starterScript, "hypershift-userdata", h.userdataExitPath(r.Name), //nolint:gosec // the machine's own paths
		"nsenter", "--net="+filepath.Join(ns, "net"), "--mount="+filepath.Join(ns, "mnt"), "--uts="+filepath.Join(ns, "uts"),
		"--wd=/", "--", "sh", UserdataPath)
	cmd.Dir = "/"
	// A cloud machine's first boot has nothing of the caller's
	// environment (the operator's KUBECONFIG, for one).
	cmd.Env = []string{"PATH=" + pathWithSelf(), "HOME=/root", ProviderIDEnv + "=" + r.ProviderID()}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = goRead, logFile, logFile
	// Its own session: no signal to the caller's process group or
	// terminal reaches it, and it is not stopped with the caller.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_ = goRead.Close()
	if err != nil {
		return false, err
	}
	// Reaped when it ends while this process lives (no zombie is taken
	// for a live starter: a zombie has no start time).
	go func() { _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	startTime, err := process.StartTime(pid)
	if err != nil {
		return true, fmt.Errorf("its starter (pid %d): %w", pid, err)
	}
	rec := userdataRecord{StartedAt: time.Now().UTC(), PID: pid, StartTime: startTime}
	if err := writeUserdataRecord(h.userdataRecordPath(r.Name), rec); err != nil {
		// Not recorded: the closed pipe tells it not to run anything.
		return true, err
	}
	if _, err := io.WriteString(goWrite, "go\n"); err != nil {
		return true, fmt.Errorf("its starter (pid %d): %w", pid, err)
	}
	return true, nil
}

// writeUserdata writes the userdata where cloud-init keeps it, in the
// machine.
func (h Host) writeUserdata(r Record, userdata []byte) error {
	path := filepath.Join(h.rootDir(r.Name), "var-lib", strings.TrimPrefix(UserdataPath, "/var/lib/"))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, userdata, 0o600)
}

func writeUserdataRecord(path string, rec userdataRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// Userdata reads how the machine's detached userdata is, from the files of
// its directory: whether its starter runs is decided by pid and start time
// and by its command line naming this machine, never by a pid alone.
func (h Host) Userdata(name string) (UserdataStatus, error) {
	if _, err := h.Get(name); err != nil {
		return UserdataStatus{}, err
	}
	unlock, err := h.lockMachine(name)
	if err != nil {
		return UserdataStatus{}, err
	}
	defer unlock()
	return h.userdataStatus(name)
}

// userdataStatus is Userdata under the machine's lock.
func (h Host) userdataStatus(name string) (UserdataStatus, error) {
	data, err := os.ReadFile(h.userdataRecordPath(name))
	if errors.Is(err, os.ErrNotExist) {
		return UserdataStatus{State: UserdataNotStarted, ExitCode: -1}, nil
	}
	if err != nil {
		return UserdataStatus{}, err
	}
	var rec userdataRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return UserdataStatus{}, fmt.Errorf("machine %s: %s: %w", name, userdataRecordFile, err)
	}
	st := UserdataStatus{StartedAt: rec.StartedAt, ExitCode: -1}
	// Alive first: a starter records the exit status before it ends.
	if h.starterRuns(name, rec) {
		st.State = UserdataRunning
		return st, nil
	}
	exit, err := os.ReadFile(h.userdataExitPath(name))
	switch {
	case err == nil:
		s := strings.TrimSpace(string(exit))
		code, convErr := strconv.Atoi(s)
		switch {
		case convErr == nil && code == 0:
			st.State, st.ExitCode = UserdataSucceeded, 0
		case convErr == nil:
			st.State, st.ExitCode = UserdataFailed, code
			st.Message = fmt.Sprintf("the userdata exited with status %d", code)
		default:
			st.State, st.Message = UserdataFailed, "the userdata was not started: the process starting it stopped before recording it"
		}
	case errors.Is(err, os.ErrNotExist) && rec.PID == 0:
		st.State, st.Message = UserdataFailed, "the userdata was not started: the process starting it stopped before recording it"
	case errors.Is(err, os.ErrNotExist):
		st.State, st.Message = UserdataFailed, "the userdata ended without recording its exit status (killed)"
	default:
		return UserdataStatus{}, err
	}
	return st, nil
}

// starterRuns says whether the recorded starter runs: the process of that
// pid has that start time and its command line names this machine's exit
// file (a record edited to name another process names none of ours).
func (h Host) starterRuns(name string, rec userdataRecord) bool {
	if rec.PID <= 0 {
		return false
	}
	if st, err := process.StartTime(rec.PID); err != nil || st != rec.StartTime {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rec.PID))
	if err != nil {
		return false
	}
	for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
		if string(arg) == h.userdataExitPath(name) {
			return true
		}
	}
	return false
}

// stopUserdata stops a detached userdata that still runs: its starter's
// process group (the userdata and what it started there), verified as
// starterRuns does.
func (h Host) stopUserdata(name string) error {
	unlock, err := h.lockMachine(name)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(h.userdataRecordPath(name))
	unlock()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var rec userdataRecord
	if json.Unmarshal(data, &rec) != nil || !h.starterRuns(name, rec) {
		return nil
	}
	return process.Terminate(rec.PID, rec.StartTime, 5*time.Second)
}

// UserdataLogTail is the end of the machine's userdata log: its last lines
// within max bytes, as valid UTF-8.
func (h Host) UserdataLogTail(name string, maxBytes int) string {
	f, err := os.Open(h.UserdataLog(name))
	if err != nil {
		return ""
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	from := max(size-int64(maxBytes), 0)
	buf := make([]byte, size-from)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if from > 0 {
		// A line cut at its start is dropped.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return strings.ToValidUTF8(strings.TrimRight(string(buf), "\n"), "?")
}

// Check says whether the machine is whole: its namespaces are held and
// its eth0 is the peer of its recorded host link. A machine whose
// namespaces went (the host restarted, someone unmounted them) is not.
func (h Host) Check(name string) error {
	r, err := h.Get(name)
	if err != nil {
		return err
	}
	for _, kind := range []string{"net", "mnt", "uts"} {
		if !h.pinned(name, kind) {
			return fmt.Errorf("machine %s: its %s namespace is gone", name, kind)
		}
	}
	if inode, ok := h.netnsInode(name); !ok || inode != r.NetnsInode {
		return fmt.Errorf("machine %s: its network namespace is not the one made for it", name)
	}
	if !h.ownsLink(r) {
		return fmt.Errorf("machine %s: its link %s to the machine network is gone", name, r.HostLink)
	}
	return nil
}
