package machine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// BootedFile is where a machine that is a pod (Boot) says that its
// userdata succeeded: the pod's readiness probe looks for it.
const BootedFile = "/run/hypershift-machine/userdata-succeeded"

// DefaultResetTimeout bounds the node's reset when a booted machine is
// told to stop; a pod machine's termination grace period is longer.
const DefaultResetTimeout = time.Minute

// BootOptions say how Boot runs a machine.
type BootOptions struct {
	// Userdata is the userdata's path; it runs with sh.
	Userdata string
	// Booted is where success is recorded; empty: BootedFile.
	Booted string
	// Reset is the command that undoes the userdata's node when the
	// machine stops; nil: `hypershift join --reset` of this executable.
	Reset []string
	// ResetTimeout bounds Reset; zero: DefaultResetTimeout.
	ResetTimeout time.Duration
	// Log is where Boot says what it does and where the userdata's and the
	// reset's output go: the pod's log.
	Log *os.File
}

// Boot is the first process of a machine that is a pod of a management
// cluster (the kube runtime's machines, docs/machines.md): it runs the
// userdata, as a cloud machine runs it at first boot, records its success
// in Booted, and then keeps the machine until ctx ends (the pod is
// deleted), when it resets the node the userdata joined — so that what the
// node made outside the pod's own namespaces (its cgroups) goes with it —
// and returns. A userdata that fails is Boot's error: the pod ends,
// Failed, its log's end as its termination message. Boot is the
// subreaper of everything started under it: the node daemon the userdata
// leaves running in the background is reparented to it, and reaped.
func Boot(ctx context.Context, o BootOptions) error {
	if o.Booted == "" {
		o.Booted = BootedFile
	}
	if o.ResetTimeout == 0 {
		o.ResetTimeout = DefaultResetTimeout
	}
	if o.Reset == nil {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		o.Reset = []string{self, "join", "--reset"}
	}
	if o.Log == nil {
		o.Log = os.Stdout
	}
	if _, err := os.Stat(o.Userdata); err != nil {
		return fmt.Errorf("userdata: %w", err)
	}
	r, err := newReaper()
	if err != nil {
		return err
	}
	defer r.stop()

	fmt.Fprintf(o.Log, "hypershift machine: running the userdata %s\n", o.Userdata)
	start := time.Now()
	code, err := r.run(ctx, o.Log, "sh", o.Userdata)
	switch {
	case err != nil:
		return fmt.Errorf("userdata: %w", err)
	case ctx.Err() != nil:
		fmt.Fprintf(o.Log, "hypershift machine: stopped while the userdata ran\n")
		return reset(r, o)
	case code != 0:
		return fmt.Errorf("the userdata %s failed: exit status %d", o.Userdata, code)
	}
	if err := os.MkdirAll(filepath.Dir(o.Booted), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.Booted, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil { //nolint:gosec // read by the readiness probe
		return err
	}
	fmt.Fprintf(o.Log, "hypershift machine: the userdata succeeded (%.1fs); running until stopped\n", time.Since(start).Seconds())
	<-ctx.Done()
	fmt.Fprintf(o.Log, "hypershift machine: stopping: resetting the node\n")
	return reset(r, o)
}

// reset runs o.Reset, bounded by o.ResetTimeout.
func reset(r *reaper, o BootOptions) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.ResetTimeout)
	defer cancel()
	code, err := r.run(ctx, o.Log, o.Reset[0], o.Reset[1:]...)
	switch {
	case err != nil:
		return fmt.Errorf("reset the node: %w", err)
	case ctx.Err() != nil:
		return fmt.Errorf("reset the node: not done within %s", o.ResetTimeout)
	case code != 0:
		return fmt.Errorf("reset the node: exit status %d", code)
	}
	return nil
}

// reaper reaps every child of this process, its own and the orphans it
// inherits as subreaper, and hands the exit status of the ones it started
// to run. Reaping with wait4(-1) takes any child's status, so the children
// run starts are never waited for otherwise.
type reaper struct {
	mu      sync.Mutex
	waiting map[int]chan int
	sigs    chan os.Signal
	done    chan struct{}
}

func newReaper() (*reaper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become the subreaper of the machine's processes: %w", err)
	}
	r := &reaper{waiting: map[int]chan int{}, sigs: make(chan os.Signal, 8), done: make(chan struct{})}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	go r.loop()
	return r, nil
}

func (r *reaper) loop() {
	for {
		select {
		case <-r.done:
			return
		case <-r.sigs:
		case <-time.After(time.Second): // a coalesced or missed SIGCHLD
		}
		r.reap()
	}
}

// reap collects every child that ended.
func (r *reaper) reap() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if ch, ok := r.waiting[pid]; ok {
			delete(r.waiting, pid)
			code := ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			ch <- code
		}
	}
}

func (r *reaper) stop() {
	signal.Stop(r.sigs)
	close(r.done)
}

// run starts a program with its output on log and waits for its exit
// status; when ctx ends first, its process group is killed and waited for.
func (r *reaper) run(ctx context.Context, log *os.File, program string, args ...string) (int, error) {
	cmd := exec.Command(program, args...) //nolint:gosec // the machine's userdata, or this executable
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ch := make(chan int, 1)
	r.mu.Lock()
	err := cmd.Start()
	if err == nil {
		r.waiting[cmd.Process.Pid] = ch
	}
	r.mu.Unlock()
	if err != nil {
		return 0, err
	}
	select {
	case code := <-ch:
		return code, nil
	case <-ctx.Done():
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		return <-ch, nil
	}
}

// ErrNotBooted is what CheckBooted's error is while the userdata has not
// succeeded (errors.Is).
var ErrNotBooted = errors.New("the machine's userdata has not succeeded")

// CheckBooted is the readiness probe of a machine that is a pod: nil once
// Boot recorded the userdata's success in path (empty: BootedFile).
func CheckBooted(path string, w io.Writer) error {
	if path == "" {
		path = BootedFile
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ErrNotBooted
	}
	if err == nil {
		fmt.Fprintf(w, "userdata succeeded at %s", data)
	}
	return err
}
