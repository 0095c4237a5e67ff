package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"hypershift.dev/internal/atomicfile"
	"hypershift.dev/internal/runtime"
)

// Supervision timing.
const (
	initialBackoff = 500 * time.Millisecond
	maxBackoff     = 30 * time.Second
	// A process that ran this long healthy resets its back-off.
	stableAfter = time.Minute
	// A process whose probe fails this long after it was ready is restarted
	// (its liveness failed).
	livenessTimeout = time.Minute
	stopGrace       = 10 * time.Second
	probeFast       = 200 * time.Millisecond
	// A ready instance is reported Unhealthy after this many probe failures
	// in a row, so one slow answer does not flap its conditions.
	failureThreshold = 3
)

type action int

const (
	actionExited action = iota
	actionStop
	actionRelease
	actionRespec
)

// proc is a running process: one we started (exited is non-nil) or one we
// adopted from an earlier operator.
type proc struct {
	pid       int
	startTime uint64
	started   time.Time
	exited    chan error
}

// instance supervises one component instance.
type instance struct {
	name string
	dir  string
	// command returns the program and arguments that run a spec.
	command func(runtime.Spec) (string, []string, error)
	// binary is the hypershift binary, which runs the restore step.
	binary   string
	log      logr.Logger
	onChange func()
	// ready reports whether another instance of the control plane is ready.
	ready func(name string) bool
	// nice is the priority its processes start with (Options.Nice).
	nice int
	// probePeriod is how often a ready process is probed
	// (Options.ProbePeriod).
	probePeriod time.Duration

	mu     sync.Mutex
	spec   runtime.Spec
	status runtime.InstanceStatus
	// files serializes writes of the instance's files, so the last write
	// of a Reloadable file is of the newest spec.
	files sync.Mutex
	// started: the instance's files were written by a start or adoption;
	// Reloadable files are replaced in place only after that.
	started bool

	respec  chan struct{}
	stop    chan struct{}
	release chan struct{}
	done    chan struct{}
}

func newInstance(dir string, command func(runtime.Spec) (string, []string, error), spec runtime.Spec, log logr.Logger, onChange func(), ready func(string) bool) *instance {
	in := &instance{
		ready:    ready,
		name:     spec.Name,
		dir:      dir,
		command:  command,
		log:      log.WithValues("component", spec.Name),
		onChange: onChange,
		spec:     spec,
		status:   runtime.InstanceStatus{Name: spec.Name, Component: spec.Component, Phase: runtime.Stopped},
		respec:   make(chan struct{}, 1),
		stop:     make(chan struct{}),
		release:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	// A process an earlier operator left running with this spec is
	// reported as it is — Running since it started — from the first
	// status on, not Stopped until the supervisor has adopted and probed
	// it: the control plane never stopped serving.
	if rec, ok := in.adoptable(spec.Hash()); ok {
		in.status = adoptedStatus(in.status, rec, spec)
	}
	return in
}

// adoptable returns the pid record of a live process that runs hash.
func (in *instance) adoptable(hash string) (pidRecord, bool) {
	rec, ok := readPidRecord(in.pidPath())
	if !ok || rec.Hash != hash || !alive(rec.PID, rec.StartTime) {
		return pidRecord{}, false
	}
	return rec, true
}

// adoptedStatus is the status of an adopted process: Running, with its
// pid and start time.
func adoptedStatus(s runtime.InstanceStatus, rec pidRecord, spec runtime.Spec) runtime.InstanceStatus {
	s.Phase = runtime.Running
	s.Version = spec.Version
	s.PID = rec.PID
	s.StartedAt = rec.startedAt()
	s.Message = ""
	return s
}

func (in *instance) pidPath() string { return filepath.Join(in.dir, "pid.json") }
func (in *instance) logPath() string { return filepath.Join(in.dir, in.name+".log") }

// setSpec replaces the spec; a changed spec restarts the process.
func (in *instance) setSpec(spec runtime.Spec) {
	in.mu.Lock()
	changed := in.spec.Hash() != spec.Hash()
	reload := !changed && in.started && reloadableChanged(in.spec, spec)
	in.spec = spec
	in.mu.Unlock()
	if changed {
		select {
		case in.respec <- struct{}{}:
		default:
		}
		return
	}
	if reload {
		// The process re-reads these files: no restart.
		if err := in.writeReloadable(); err != nil {
			in.log.Error(err, "replace reloadable files")
		}
	}
}

func (in *instance) markStarted() {
	in.mu.Lock()
	in.started = true
	in.mu.Unlock()
}

func (in *instance) currentSpec() runtime.Spec {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.spec
}

func (in *instance) getStatus() runtime.InstanceStatus {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.status
}

func (in *instance) update(f func(s *runtime.InstanceStatus)) {
	in.mu.Lock()
	before := in.status.Phase
	f(&in.status)
	changed := before != in.status.Phase
	in.mu.Unlock()
	if changed && in.onChange != nil {
		in.onChange()
	}
}

// run supervises the instance until it is stopped or released.
func (in *instance) run() {
	defer close(in.done)
	backoff := initialBackoff
	for {
		p, err := in.adoptOrStart()
		if errors.Is(err, errInterrupted) {
			// Stopped or released before the process existed.
			in.update(func(s *runtime.InstanceStatus) { s.Phase = runtime.Stopped })
			return
		}
		if err != nil {
			in.log.Error(err, "start failed")
			in.update(func(s *runtime.InstanceStatus) {
				s.Phase = runtime.BackOff
				s.LastExitReason = "StartFailed"
				s.Message = err.Error()
				s.PID = 0
			})
			if in.wait(backoff) != actionExited {
				return
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		act, exitErr := in.watch(p)
		switch act {
		case actionStop:
			if err := terminate(p.pid, p.startTime, stopGrace); err != nil {
				in.log.Error(err, "stop failed")
			}
			if err := removePidRecord(in.pidPath()); err != nil {
				in.log.Error(err, "remove pid file")
			}
			in.update(func(s *runtime.InstanceStatus) {
				s.Phase = runtime.Stopped
				s.PID = 0
			})
			return
		case actionRelease:
			return
		case actionRespec:
			if _, _, err := in.command(in.currentSpec()); err != nil {
				// The new spec cannot run (a release the install lacks):
				// the process of the earlier one keeps serving, and
				// adoptOrStart reports why.
				continue
			}
			in.log.Info("spec changed, restarting", "pid", p.pid)
			if err := terminate(p.pid, p.startTime, stopGrace); err != nil {
				in.log.Error(err, "stop for restart failed")
			}
			continue
		case actionExited:
		}
		if time.Since(p.started) > stableAfter {
			backoff = initialBackoff
		}
		reason := exitReason(exitErr)
		tail := LogTail(in.logPath(), 5)
		in.log.Info("exited, restarting after back-off", "reason", reason, "backoff", backoff.String())
		in.update(func(s *runtime.InstanceStatus) {
			s.Phase = runtime.BackOff
			s.Restarts++
			s.LastExitReason = reason
			s.Message = tail
			s.PID = 0
		})
		if in.wait(backoff) != actionExited {
			return
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// wait sleeps for d unless stopped or released; it returns actionExited when
// the sleep ran out. A stop during back-off stops the process of an earlier
// spec that is left serving (a new spec that cannot run), and clears the
// pid file.
func (in *instance) wait(d time.Duration) action {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return actionExited
	case <-in.respec:
		return actionExited
	case <-in.stop:
		if rec, ok := readPidRecord(in.pidPath()); ok && alive(rec.PID, rec.StartTime) {
			if err := terminate(rec.PID, rec.StartTime, stopGrace); err != nil {
				in.log.Error(err, "stop failed")
			}
		}
		_ = removePidRecord(in.pidPath())
		in.update(func(s *runtime.InstanceStatus) { s.Phase = runtime.Stopped; s.PID = 0 })
		return actionStop
	case <-in.release:
		return actionRelease
	}
}

// adoptOrStart adopts the process recorded in the pid file when it is alive
// and runs the current spec; otherwise it starts a new one.
func (in *instance) adoptOrStart() (*proc, error) {
	spec := in.currentSpec()
	hash := spec.Hash()
	// A spec that cannot run leaves a running process of an older one
	// alone: better the old version serving than nothing.
	if _, _, err := in.command(spec); err != nil {
		return nil, err
	}
	if rec, ok := readPidRecord(in.pidPath()); ok && alive(rec.PID, rec.StartTime) {
		if rec.Hash == hash {
			in.log.Info("adopted running process", "pid", rec.PID)
			// A renewal while no operator ran reaches the process now.
			in.markStarted()
			if err := in.writeReloadable(); err != nil {
				in.log.Error(err, "replace reloadable files")
			}
			in.update(func(s *runtime.InstanceStatus) { *s = adoptedStatus(*s, rec, spec) })
			return &proc{pid: rec.PID, startTime: rec.StartTime, started: rec.startedAt()}, nil
		}
		in.log.Info("running process has an old spec, replacing it", "pid", rec.PID)
		if err := terminate(rec.PID, rec.StartTime, stopGrace); err != nil {
			return nil, err
		}
	}
	if !in.waitForDependencies(spec.After) {
		return nil, errInterrupted
	}
	return in.start(spec, hash)
}

// errInterrupted: the instance was stopped or released while waiting.
var errInterrupted = errors.New("interrupted")

// waitForDependencies waits until every instance in after is ready. It
// returns false when the instance is stopped or released meanwhile.
func (in *instance) waitForDependencies(after []string) bool {
	if len(after) > 0 {
		in.update(func(s *runtime.InstanceStatus) {
			s.Phase = runtime.Starting
			s.Message = "waiting for " + strings.Join(after, ", ")
		})
	}
	ticker := time.NewTicker(probeFast / 2)
	defer ticker.Stop()
	for {
		ready := true
		for _, dep := range after {
			if !in.ready(dep) {
				ready = false
			}
		}
		if ready {
			return true
		}
		select {
		case <-in.stop:
			return false
		case <-in.release:
			return false
		case <-ticker.C:
		}
	}
}

func (in *instance) start(spec runtime.Spec, hash string) (*proc, error) {
	if err := os.MkdirAll(in.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", in.dir, err)
	}
	for _, f := range spec.Files {
		if f.Reloadable {
			continue // below, from the newest spec
		}
		path := filepath.Join(in.dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := atomicfile.Write(path, f.Content, fileMode(f)); err != nil {
			return nil, err
		}
	}
	in.markStarted()
	if err := in.writeReloadable(); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(in.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "--- %s starting %s\n", time.Now().UTC().Format(time.RFC3339), spec.Name)
	if err := in.restoreData(spec, logFile); err != nil {
		return nil, err
	}

	path, args, err := in.command(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...) //nolint:gosec // our own binary, a checked release or a host program named by our own spec
	cmd.Dir = in.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), spec.Env...)
	// Its own session: the component outlives the operator and a terminal's
	// signals, and its whole process group can be stopped at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	pid := cmd.Process.Pid
	if err := lowerPriority(pid, in.nice); err != nil {
		// It still runs, at the usual priority: worth a line, not a failure.
		in.log.Error(err, "lower the CPU priority", "pid", pid, "nice", in.nice)
	}
	startTime, err := procStartTime(pid)
	if err != nil {
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("read start time of %s: %w", spec.Name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	now := time.Now()
	if err := writePidRecord(in.pidPath(), pidRecord{PID: pid, StartTime: startTime, Hash: hash, StartedAt: &now, StopLast: spec.StopLast}); err != nil {
		_ = cmd.Process.Kill()
		return nil, err
	}
	in.log.Info("started", "pid", pid)
	in.update(func(s *runtime.InstanceStatus) {
		s.Phase = runtime.Starting
		s.PID = pid
		s.StartedAt = now
		s.Version = spec.Version
		s.Message = ""
	})
	return &proc{pid: pid, startTime: startTime, started: time.Now(), exited: exited}, nil
}

// watch probes p until it exits or the instance is stopped, released or
// given a new spec.
func (in *instance) watch(p *proc) (action, error) {
	readiness := in.currentSpec().Readiness
	probe, probeCA := newProber(readiness), readiness.CAPEM
	defer func() { probe.close() }()
	var failingSince time.Time
	failures := 0
	// An adopted process (no exit channel) already served: it is Running
	// until its probe fails failureThreshold times, like any ready one.
	wasReady := p.exited == nil
	interval := time.Duration(0)
	for {
		timer := time.NewTimer(interval)
		select {
		case err := <-p.exited:
			timer.Stop()
			return actionExited, err
		case <-in.stop:
			timer.Stop()
			return actionStop, nil
		case <-in.release:
			timer.Stop()
			return actionRelease, nil
		case <-in.respec:
			timer.Stop()
			return actionRespec, nil
		case <-timer.C:
		}
		if p.exited == nil && !alive(p.pid, p.startTime) {
			return actionExited, errors.New("exited while not supervised by this operator")
		}
		// The probe's CA is not in the spec hash: a root-CA rotation
		// changes it without a restart, and the probe must verify with the
		// bundle of now (the one it started with may be dropped).
		if cur := in.currentSpec().Readiness; !bytes.Equal(cur.CAPEM, probeCA) {
			probe.close()
			probe, probeCA = newProber(cur), cur.CAPEM
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := probe.probe(ctx)
		cancel()
		switch {
		case err == nil:
			// Each change of readiness is logged: the log says when an
			// instance served, not only when it started.
			if in.getStatus().Phase != runtime.Running {
				in.log.Info("ready", "pid", p.pid, "sinceStart", time.Since(p.started).Round(time.Millisecond).String())
			}
			wasReady = true
			failingSince = time.Time{}
			failures = 0
			interval = in.probePeriod
			in.update(func(s *runtime.InstanceStatus) {
				s.Phase = runtime.Running
				s.Message = ""
			})
		case !wasReady:
			interval = probeFast
		default:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			failures++
			interval = probeFast
			if failures < failureThreshold {
				continue
			}
			interval = probeFast * 5
			if in.getStatus().Phase != runtime.Unhealthy {
				in.log.Info("unhealthy", "pid", p.pid, "error", err.Error())
			}
			in.update(func(s *runtime.InstanceStatus) {
				s.Phase = runtime.Unhealthy
				s.Message = err.Error()
			})
			if time.Since(failingSince) > livenessTimeout {
				in.log.Info("unhealthy for too long, restarting", "pid", p.pid, "error", err.Error())
				if err := terminate(p.pid, p.startTime, stopGrace); err != nil {
					in.log.Error(err, "stop unhealthy process")
				}
				var exitErr error
				if p.exited != nil {
					exitErr = <-p.exited
				}
				return actionExited, fmt.Errorf("liveness failed: %w (then: %s)", err, exitReason(exitErr))
			}
		}
	}
}

func exitReason(err error) string {
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return "Completed"
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "Signaled: " + ws.Signal().String()
		}
		return fmt.Sprintf("Error: exit code %d", exitErr.ExitCode())
	default:
		return err.Error()
	}
}

// LogTail returns the last n lines of a log file (at most its last 4 KiB),
// for status and error messages.
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 4096
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	offset := max(info.Size()-window, 0)
	buf := make([]byte, window)
	m, _ := f.ReadAt(buf, offset)
	return runtime.LastLines(string(buf[:m]), n)
}
