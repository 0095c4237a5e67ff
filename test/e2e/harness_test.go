package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hypershift.dev/internal/testenv"
)

// cli runs the hypershift binary exactly as a user would.
type cli struct {
	t       *testing.T
	bin     string
	dataDir string
	// destroyCreated: each `create cluster` it runs is undone with
	// `destroy cluster --wait` when the test ends (a shared plane's).
	destroyCreated bool
}

type result struct {
	stdout, stderr string
	err            error
}

func newCLI(t *testing.T) *cli {
	return &cli{t: t, bin: testenv.Binary(t), dataDir: shortTempDir(t)}
}

// in is the cli reporting to t, a subtest of the one it was made for: a
// subtest that fails through its parent's t stops the parent's goroutine
// from its own, and Go reports that instead of the failure.
func (c *cli) in(t *testing.T) *cli {
	sub := *c
	sub.t = t
	return &sub
}

// shortTempDir is testenv.ShortTempDir, whose processes the CPU meter
// charges to t.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir := testenv.ShortTempDir(t)
	meter.own(t, dir)
	return dir
}

// upCLI starts a management plane in its own data dir (with upArgs added to
// `up --detach`, metrics off, file:// archives anywhere under the temporary
// directory, where the tests keep them) and purges it when the test ends.
func upCLI(t *testing.T, upArgs ...string) *cli {
	t.Helper()
	hs := newCLI(t)
	t.Cleanup(func() { hs.run("down", "--purge") })
	hs.mustExplained(func() string { return "\n" + logTails(filepath.Join(hs.dataDir, "management"), 30) },
		append([]string{"up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir()}, upArgs...)...)
	return hs
}

// logTails is the last n lines of each component log under dir (a
// management plane's or a control plane's), for a start that failed: the
// directory goes with the test.
func logTails(dir string, n int) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "*", "*.log"))
	var b strings.Builder
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "--- the last %d lines of %s:\n%s\n", min(n, len(lines)), l, strings.Join(lines[max(0, len(lines)-n):], "\n"))
	}
	return b.String()
}

// sharedPlane is the management plane of the tests that need only fresh
// hosted clusters of their own, none of the plane: `up` once for the
// package, stopped and purged after the last test (TestMain). A test on it
// names its clusters as no other test of the plane does (nor as a prefix
// of another's: tests find processes by their cluster's directory), and
// every cluster it creates is destroyed when it ends, so the plane carries
// nothing from one test to the next. A test of the plane itself —
// recovery, its loss, purge, restore, `up` flags, what it counts across
// clusters — or one that must not share the start queue or the operator
// keeps its own (upCLI).
func sharedPlane(t *testing.T) *cli {
	t.Helper()
	shared.once.Do(func() {
		shared.bin = testenv.Binary(t)
		dir, err := os.MkdirTemp("", "hs-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		up := &cli{t: t, bin: shared.bin, dataDir: dir}
		if r := up.run("up", "--detach", "--metrics-bind-address", "0"); r.err != nil {
			shared.err = fmt.Errorf("the shared management plane: hypershift up: %w\n%s", r.err, r.stderr)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return &cli{t: t, bin: shared.bin, dataDir: shared.dir, destroyCreated: true}
}

var shared struct {
	once     sync.Once
	bin, dir string
	err      error
}

// stopSharedPlane stops and purges the shared plane, if a test started it.
func stopSharedPlane() error {
	if shared.dir == "" {
		return nil
	}
	cmd := exec.Command(shared.bin, "--data-dir", shared.dir, "down", "--purge")
	cmd.Env = withoutKubeconfig()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("stop the shared management plane: %w\n%s", err, out)
	}
	return nil
}

// destroyWhenDone registers the destruction of the cluster that args
// (a `create cluster` command) creates, when the cli asks for it.
func (c *cli) destroyWhenDone(args []string) {
	if !c.destroyCreated || len(args) < 2 || args[0] != "create" || args[1] != "cluster" ||
		slices.Contains(args, "--render") || slices.Contains(args, "--help") {
		return
	}
	name, namespace := "", "clusters"
	for i := 2; i < len(args)-1; i++ {
		switch args[i] {
		case "--name":
			name = args[i+1]
		case "-n", "--namespace":
			namespace = args[i+1]
		}
	}
	if name == "" {
		return
	}
	c.t.Cleanup(func() {
		// A create that was refused left nothing to destroy.
		r := c.run("destroy", "cluster", "--name", name, "-n", namespace, "--wait", "--timeout", "3m")
		if r.err != nil && !strings.Contains(r.stderr, "hosted cluster "+namespace+"/"+name+" not found") {
			c.t.Errorf("destroy cluster %s/%s on the shared plane: %v\n%s", namespace, name, r.err, r.stderr)
		}
	})
}

func (c *cli) run(args ...string) result {
	c.t.Helper()
	return c.runWith(exec.Command, args...)
}

// runWith runs the binary on the cli's data dir, without the caller's
// KUBECONFIG, as a command newCmd makes (exec.Command on the host,
// netns.command in a network namespace).
func (c *cli) runWith(newCmd func(name string, args ...string) *exec.Cmd, args ...string) result {
	c.destroyWhenDone(args)
	cmd := newCmd(c.bin, append([]string{"--data-dir", c.dataDir}, args...)...)
	cmd.Env = withoutKubeconfig()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	spawns.add("hypershift", cmd)
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

// must runs a command that has to succeed.
func (c *cli) must(args ...string) string {
	c.t.Helper()
	return c.mustExplained(func() string { return "" }, args...)
}

// mustExplained is must, whose failure also shows what explain returns
// then (logs of a directory that goes with the test).
func (c *cli) mustExplained(explain func() string, args ...string) string {
	c.t.Helper()
	start := time.Now()
	r := c.run(args...)
	if r.err != nil {
		c.t.Fatalf("hypershift %s: %v\nstdout:\n%s\nstderr:\n%s%s", strings.Join(args, " "), r.err, r.stdout, r.stderr, explain())
	}
	c.t.Logf("hypershift %s (%.1fs)", strings.Join(args, " "), time.Since(start).Seconds())
	return r.stdout
}

// fails runs a command that has to fail and returns its standard error.
func (c *cli) fails(args ...string) string {
	c.t.Helper()
	r := c.run(args...)
	if r.err == nil {
		c.t.Fatalf("hypershift %s succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), r.stdout)
	}
	for _, noise := range []string{"goroutine ", "panic:", ".go:"} {
		if strings.Contains(r.stderr, noise) {
			c.t.Errorf("hypershift %s printed %q, want a plain message:\n%s", strings.Join(args, " "), noise, r.stderr)
		}
	}
	return r.stderr
}

func withoutKubeconfig() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	return env
}

// kubectlPath finds a stock kubectl: on PATH, or beside the binary.
func kubectlPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		path = filepath.Join(filepath.Dir(testenv.Binary(t)), "kubectl")
		if _, statErr := os.Stat(path); statErr != nil {
			t.Fatalf("no kubectl on PATH nor at %s: run `make deps`", path)
		}
	}
	return path
}

// kubectl runs a stock kubectl.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(kubectlPath(t), append([]string{"--kubeconfig", kubeconfig, "--request-timeout=20s"}, args...)...)
	cmd.Env = withoutKubeconfig()
	out, err := cmd.CombinedOutput()
	spawns.add("kubectl", cmd)
	return kubectlNoise.ReplaceAllString(string(out), ""), err
}

// kubectlNoise is a line kubectl's WebSocket exec client logs now and then
// when a stream ends (seen with `kubectl exec` of v1.37): not part of
// the command's output, which tests compare.
var kubectlNoise = regexp.MustCompile(`(?m)^E\d{4} [0-9:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\n`)

func mustKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// pidsUnder lists the processes whose command line mentions dir.
func pidsUnder(t *testing.T, dir string) map[string]int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(raw, []byte(dir)) {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		name := strings.Join(args, " ")
		if len(args) > 2 && args[1] == "component" {
			name = args[2]
		}
		out[name+"#"+strconv.Itoa(pid)] = pid
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// eventually checks cond until it holds, and fails the test with cond's
// last error after timeout. It checks again after 100 ms, then half as
// long again each time, up to every second, and past 20 s of waiting
// every twentieth of the time waited so far, up to every 3 s: most
// conditions run kubectl or the hypershift CLI, a process that costs
// 0.2–0.4 CPU-seconds to start. Polling one every 200 ms for minutes took
// a core that the tests running beside it needed; every second, the
// waits of minutes (a machine's boot, a rollout) were most of the checks.
// A wait of over 20 s then ends at most 5 % (and 3 s) after its condition
// holds, a shorter one at most a second after. The last check is at the
// deadline.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	var err error
	for interval := 100 * time.Millisecond; ; interval = pollInterval(interval, time.Since(start)) {
		if err = cond(); err == nil {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		time.Sleep(min(interval, left))
	}
	t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
}

// pollInterval is eventually's next interval after last, waited so far.
func pollInterval(last, waited time.Duration) time.Duration {
	return min(max(min(last*3/2, time.Second), waited/20), 3*time.Second)
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// dirContains reports whether any file under dir holds s.
func dirContains(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil // a file removed while walking
		}
		found = bytes.Contains(data, []byte(s))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func regexpMatch(s, pattern string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// wildcardListeners lists the TCP sockets that processes under dir listen
// on every interface with (0.0.0.0 or ::), from /proc/net/tcp{,6} and
// the processes' file descriptors.
func wildcardListeners(t *testing.T, dir string) []string {
	t.Helper()
	wildcard := map[string]string{} // socket inode -> local address
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			addr, _, _ := strings.Cut(f[1], ":")
			if strings.Trim(addr, "0") == "" || addr == "0000000000000000FFFF000000000000" {
				wildcard[f[9]] = table + " " + f[1]
			}
		}
	}
	var found []string
	pids := pidsUnder(t, dir)
	if len(pids) == 0 {
		t.Fatalf("no process found under %s", dir)
	}
	for name, pid := range pids {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // exited meanwhile
		}
		for _, fd := range fds {
			target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
			if err != nil {
				continue
			}
			if inode, ok := strings.CutPrefix(target, "socket:["); ok {
				if addr, bad := wildcard[strings.TrimSuffix(inode, "]")]; bad {
					found = append(found, name+" listens on "+addr)
				}
			}
		}
	}
	return found
}

// adminKubeconfig writes the admin kubeconfig of hosted cluster name with
// `create kubeconfig -o`, as a user would, and returns its path.
func (c *cli) adminKubeconfig(name string) string {
	c.t.Helper()
	kc := filepath.Join(c.dataDir, name+".kubeconfig")
	c.must("create", "kubeconfig", "--name", name, "-o", kc)
	return kc
}

// spawns counts the processes the tests start and the CPU they used, by
// program: TestMain prints it, since a CLI process costs 0.2–0.4
// CPU-seconds to start and the tests are bound by CPU.
var spawns spawnCounter

type spawnCounter struct {
	mu      sync.Mutex
	program map[string]spawnTotal
}

type spawnTotal struct {
	runs int
	cpu  time.Duration
}

func (s *spawnCounter) add(program string, cmd *exec.Cmd) {
	if cmd.ProcessState == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.program == nil {
		s.program = map[string]spawnTotal{}
	}
	t := s.program[program]
	t.runs++
	t.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	s.program[program] = t
}

func (s *spawnCounter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var parts []string
	for _, program := range slices.Sorted(maps.Keys(s.program)) {
		t := s.program[program]
		parts = append(parts, fmt.Sprintf("%s %d runs, %.0f CPU-s", program, t.runs, t.cpu.Seconds()))
	}
	return "processes the tests ran: " + strings.Join(parts, "; ")
}

func TestPollInterval(t *testing.T) {
	interval, waited := 100*time.Millisecond, time.Duration(0)
	var checks int
	for waited < 5*time.Minute {
		waited += interval
		checks++
		interval = pollInterval(interval, waited)
	}
	// 5 minutes of waiting: a check a second would be 300.
	if checks < 100 || checks > 140 {
		t.Errorf("%d checks over 5 minutes, want 100–140", checks)
	}
	if got := pollInterval(100*time.Millisecond, 150*time.Millisecond); got != 150*time.Millisecond {
		t.Errorf("second interval %s, want 150ms", got)
	}
	for _, c := range []struct{ last, waited, want time.Duration }{
		{time.Second, 10 * time.Second, time.Second},
		{time.Second, 40 * time.Second, 2 * time.Second},
		{2 * time.Second, 10 * time.Minute, 3 * time.Second},
	} {
		if got := pollInterval(c.last, c.waited); got != c.want {
			t.Errorf("interval after %s of waiting: %s, want %s", c.waited, got, c.want)
		}
	}
}
