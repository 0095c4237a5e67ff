package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// meter charges the CPU time of the host's processes to the end-to-end
// test they belong to, so that the package can say which tests the CPU
// went to (the tests are bound by CPU, and their wall time says little of
// that when they run side by side). TestMain starts it and prints its
// table.
var meter = newCPUMeter("/proc", 5*time.Second)

// cpuMeter samples every process's own CPU time (utime+stime of
// /proc/PID/stat) every interval. A process is charged, when first seen,
// to the test whose directory (a data dir, a node or machines dir) its
// command line names, else to its parent's test, else — a real node's
// process, which names none (containerd's shims and the pods under them,
// the processes of a machine) — to the whole-host test running then (one
// at a time), else to nobody. A process that lived less than an interval
// between two samples is missed: the spawn counter has the CLI's and
// kubectl's runs.
type cpuMeter struct {
	root     string
	interval time.Duration
	ticks    float64 // clock ticks per second of /proc's times

	mu    sync.Mutex
	dirs  map[string]string // directory → test
	host  string            // the whole-host test running, if any
	procs map[procID]*procCPU
	// sampled: the first sample is taken; a process seen after it started
	// after it.
	sampled bool
	stop    chan struct{}
	done    chan struct{}
}

type procID struct {
	pid   int
	start uint64 // start time in ticks after boot: a reused pid is another process
}

type procCPU struct {
	test string
	// cpu is the seconds used at the last sample, base those used before
	// the meter's first sample (for a process that ran before it).
	cpu, base float64
}

type procStat struct {
	id    procID
	ppid  int
	ticks uint64
}

func newCPUMeter(root string, interval time.Duration) *cpuMeter {
	// USER_HZ is 100 on every Linux architecture Go builds for.
	return &cpuMeter{root: root, interval: interval, ticks: 100, dirs: map[string]string{}, procs: map[procID]*procCPU{}}
}

// own records that processes naming dir belong to test t.
func (m *cpuMeter) own(t testing.TB, dir string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dirs[dir] = topTest(t)
}

// holdHost records the whole-host test running now ("" when none).
func (m *cpuMeter) holdHost(test string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.host = test
}

func (m *cpuMeter) start() {
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.done)
		tick := time.NewTicker(m.interval)
		defer tick.Stop()
		for {
			m.sample()
			select {
			case <-m.stop:
				m.sample()
				return
			case <-tick.C:
			}
		}
	}()
}

// finish takes a last sample and returns the table.
func (m *cpuMeter) finish(top int) string {
	if m.stop != nil {
		close(m.stop)
		<-m.done
	}
	return m.table(top)
}

// sample reads every process once.
func (m *cpuMeter) sample() {
	entries, err := os.ReadDir(m.root)
	if err != nil {
		return
	}
	stats := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(filepath.Join(m.root, e.Name(), "stat")); ok {
			st.id.pid = pid
			stats[pid] = st
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for pid := range stats {
		m.charge(stats, pid, 0)
	}
	m.sampled = true
}

// charge records stats[pid]'s CPU, first finding its test (its parent's
// first: it may be new in this sample too); it returns that test.
func (m *cpuMeter) charge(stats map[int]procStat, pid, depth int) string {
	st, ok := stats[pid]
	if !ok {
		return ""
	}
	p := m.procs[st.id]
	if p == nil {
		p = &procCPU{test: m.testOf(st.id.pid)}
		if st.id.pid == os.Getpid() {
			p.test = selfRow
		}
		if p.test == "" && depth < 64 && st.ppid > 1 {
			p.test = m.charge(stats, st.ppid, depth+1)
		}
		if p.test == "" && m.host != "" && m.onANode(st.id.pid) {
			p.test = m.host
		}
		m.procs[st.id] = p
		if !m.sampled {
			p.base = float64(st.ticks) / m.ticks
		}
	}
	p.cpu = float64(st.ticks) / m.ticks
	return p.test
}

// testOf is the test whose directory pid's command line names (the
// longest such directory).
func (m *cpuMeter) testOf(pid int) string {
	cmdline, err := os.ReadFile(filepath.Join(m.root, strconv.Itoa(pid), "cmdline"))
	if err != nil || len(cmdline) == 0 {
		return ""
	}
	best, test := 0, ""
	for dir, t := range m.dirs {
		if len(dir) > best && bytes.Contains(cmdline, []byte(dir)) {
			best, test = len(dir), t
		}
	}
	return test
}

// onANode reports whether pid runs under a real node's cgroups (its
// kubelet's cgroup root, hypershift-node-…) or is one of a node's
// daemons.
func (m *cpuMeter) onANode(pid int) bool {
	cg, err := os.ReadFile(filepath.Join(m.root, strconv.Itoa(pid), "cgroup"))
	if err == nil && bytes.Contains(cg, []byte("hypershift-node")) {
		return true
	}
	comm, err := os.ReadFile(filepath.Join(m.root, strconv.Itoa(pid), "comm"))
	if err != nil {
		return false
	}
	switch strings.TrimSpace(string(comm)) {
	case "containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "kubelet", "kube-proxy", "flanneld":
		return true
	}
	return false
}

// selfRow is the row of the test binary's own CPU: the tests' code, the
// clients and servers they run in-process.
const selfRow = "(the e2e test binary itself)"

// readProcStat parses /proc/PID/stat: the parent, utime+stime and the
// start time. The command name is skipped by its last ')'.
func readProcStat(path string) (procStat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	// After ") ": state(3) ppid(4) … utime(14) stime(15) … starttime(22).
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	utime, err2 := strconv.ParseUint(f[11], 10, 64)
	stime, err3 := strconv.ParseUint(f[12], 10, 64)
	start, err4 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procStat{}, false
	}
	return procStat{id: procID{start: start}, ppid: ppid, ticks: utime + stime}, true
}

// table is the top tests by CPU-seconds, then the sums.
func (m *cpuMeter) table(top int) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	byTest := map[string]float64{}
	var total float64
	for _, p := range m.procs {
		byTest[p.test] += p.cpu - p.base
		total += p.cpu - p.base
	}
	type row struct {
		test string
		cpu  float64
	}
	var rows []row
	for t, c := range byTest {
		if t != "" && t != selfRow {
			rows = append(rows, row{t, c})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(b.cpu, a.cpu) })
	var sb strings.Builder
	fmt.Fprintf(&sb, "CPU by test (each process sampled every %s; charged to the test its command line, its parent's or, on a real node, the whole-host test names):\n", m.interval)
	for i, r := range rows {
		if i == top {
			break
		}
		fmt.Fprintf(&sb, "  %7.0f CPU-s  %s\n", r.cpu, r.test)
	}
	fmt.Fprintf(&sb, "  %7.0f CPU-s  in all %d tests; %.0f CPU-s the test binary itself; %.0f CPU-s the host's other processes (the other packages' tests and builds among them); sampled %.0f CPU-s\n",
		max(0, total-byTest[""]-byTest[selfRow]), len(rows), byTest[selfRow], byTest[""], total)
	return sb.String()
}

// TestCPUMeterCharges: a process naming a test's directory is charged to
// it, its child naming none to the same test, a node's process naming none
// to the whole-host test running when it was first seen, and anything else
// to nobody; a reused pid is another process; a process that ran before
// the first sample is charged only what it used after it.
func TestCPUMeterCharges(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, ppid int, start, ticks uint64, cmdline, cgroup string) {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// comm may hold spaces and parentheses: the parser skips to the last ')'.
		stat := fmt.Sprintf("%d (a (b) c) S %d 0 0 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0", pid, ppid, ticks, start)
		for name, content := range map[string]string{"stat": stat, "cmdline": cmdline, "cgroup": cgroup, "comm": "x\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	m := newCPUMeter(root, time.Hour)
	m.dirs["/tmp/hs-1"] = "TestA"
	m.dirs["/tmp/hs-1/nested"] = "TestB"
	m.host = "TestHost"
	proc(9, 1, 1, 500, "hypershift\x00up\x00--data-dir\x00/tmp/hs-1\x00", "0::/\n")
	m.sample()
	proc(9, 1, 1, 600, "hypershift\x00up\x00--data-dir\x00/tmp/hs-1\x00", "0::/\n")
	proc(10, 1, 5, 300, "hypershift\x00up\x00--data-dir\x00/tmp/hs-1\x00", "0::/\n")
	proc(11, 10, 6, 200, "etcd\x00", "0::/\n")
	proc(12, 1, 7, 50, "hypershift\x00join\x00--node-dir\x00/tmp/hs-1/nested/node\x00", "0::/\n")
	proc(13, 1, 8, 700, "pause\x00", "0::/hypershift-node-abc/kubepods/pod1\n")
	proc(14, 1, 9, 1000, "go\x00build\x00", "0::/\n")
	m.sample()
	m.host = ""
	// pid 11 exits and its pid is reused by a process of nobody's.
	if err := os.RemoveAll(filepath.Join(root, "11")); err != nil {
		t.Fatal(err)
	}
	proc(11, 1, 99, 100, "sleep\x00", "0::/\n")
	proc(10, 1, 5, 400, "hypershift\x00up\x00--data-dir\x00/tmp/hs-1\x00", "0::/\n")
	m.sample()

	got := map[string]float64{}
	for _, p := range m.procs {
		got[p.test] += p.cpu - p.base
	}
	want := map[string]float64{"TestA": 7, "TestB": 0.5, "TestHost": 7, "": 11}
	for test, cpu := range want {
		if got[test] != cpu {
			t.Errorf("%q charged %.1f CPU-s, want %.1f (all: %v)", test, got[test], cpu, got)
		}
	}
	if table := m.table(10); !strings.Contains(table, "7 CPU-s  TestHost") || !strings.Contains(table, "in all 3 tests") {
		t.Errorf("table:\n%s", table)
	}
}
