package e2e

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// What an end-to-end test needs of this host decides what it may run
// beside. Every test says so first, with one of these calls:
//
//   - ownDirAndPorts(t): the test uses only its own data dir and loopback
//     ports the kernel hands out: it runs beside any other test.
//   - quiet(t): it also asserts a bound on time (an outage budget, a count
//     of answers within a window, requests that must never fail) that a
//     busy CPU could break: it runs beside one other test at most (which
//     may be another quiet test: each of the two has one beside it).
//   - wholeHost(t): it needs what the host has one of — a real node (a
//     kubelet on port 10250, containerd, kube-proxy, the CNI bridge, host
//     iptables), a network namespace with its veth on the host, or a
//     before/after diff of the host's state: one such test at a time,
//     beside the others.
//   - quietWholeHost(t): both.
//
// At most $HYPERSHIFT_E2E_SLOTS tests run side by side (1: one after
// another; make test gives 3), the whole-host ones first, then the longest
// first (costs); and a test starts beside others only while the CPU is
// idle enough (withLoad), whatever else runs on the machine: the other
// packages' tests run beside these.
func ownDirAndPorts(t *testing.T) { lanes.enter(t, false, false) }

func quiet(t *testing.T) { lanes.enter(t, true, false) }

func wholeHost(t *testing.T) { lanes.enter(t, false, true) }

func quietWholeHost(t *testing.T) { lanes.enter(t, true, true) }

// quietNow makes the running test of subtest t quiet until done is called
// or t ends: no test starts until at most one other runs beside it, and
// then at most one does. For a long test that asserts a bound on time in
// some of its steps only: it need not hold the others back for the rest.
func quietNow(t *testing.T) (done func()) {
	t.Helper()
	start := time.Now()
	done = sync.OnceFunc(lanes.quieten(topTest(t)))
	t.Logf("lanes: quiet after %.1fs", time.Since(start).Seconds())
	t.Cleanup(done)
	return done
}

// topTest is the name of the top-level test t is, or is a subtest of.
func topTest(t testing.TB) string { return strings.Split(t.Name(), "/")[0] }

// costs is how long each test ran, in seconds, beside others on a 2-core
// machine (test-report.txt of a make test run on a clean clone,
// 2026-11-30). It only orders the start, longest first, so that a long
// test does not start last; a test missing here starts after those
// listed.
var costs = map[string]int{
	"TestKubeRuntime":                      858,
	"TestHostPlatform":                     420,
	"TestCertificateRenewal":               288,
	"TestMigrateCluster":                   212,
	"TestBackupRestore":                    173,
	"TestCARotation":                       113,
	"TestCARotationHighlyAvailable":        105,
	"TestCARotationRealNode":               86,
	"TestHighlyAvailableChaos":             78,
	"TestHostedClusters":                   64,
	"TestHighlyAvailableUpgrade":           63,
	"TestBackupRestoreHighlyAvailable":     58,
	"TestManagementPlaneLoss":              52,
	"TestIdleWake":                         50,
	"TestStartQueue":                       47,
	"TestKonnectivityServer":               47,
	"TestEndpointHostAddress":              44,
	"TestWholeCluster":                     43,
	"TestRealNodeInPlaceUpgrade":           42,
	"TestDataPlane":                        36,
	"TestAddons":                           36,
	"TestUpgradeWhileHibernated":           34,
	"TestControlPlaneUpgrade":              34,
	"TestNoneNodes":                        33,
	"TestKonnectivityOneWayFirewall":       31,
	"TestBackupRestoreSecondPlane":         31,
	"TestNodePools":                        30,
	"TestSingleReplicaRecovers":            29,
	"TestDumpCluster":                      29,
	"TestHibernation":                      26,
	"TestFleetMetrics":                     22,
	"TestNodePoolUpgrade":                  22,
	"TestDashboard":                        21,
	"TestSingleProcessControlPlane":        19,
	"TestSchedulerStartsWithFirstNodePool": 19,
	"TestWatchCacheKeptForWhatNodesUse":    13,
	"TestReleases":                         11,
}

// TestMain lets the lanes, not -parallel, bound how many tests run at
// once, unless -parallel is given.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "64"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	dir, err := os.MkdirTemp("", "hs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	packageTempDir = dir
	if _, known := cpuBusy(); !known {
		fmt.Fprintln(os.Stderr, "lanes: /proc/stat is not readable: the end-to-end tests run one at a time")
	}
	meter.start()
	code := m.Run()
	fmt.Fprintln(os.Stderr, spawns.String())
	fmt.Fprint(os.Stderr, meter.finish(25))
	if err := stopSharedPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// packageTempDir holds what the package's tests build once and share.
var packageTempDir string

// The bound on how busy the CPU may be for one more test to start: 70 %,
// so that at least 0.6 of 2 cores idled over the last 10 s; and 10 s
// between two starts (20 s until 2026-11-30, when the short tests of the
// run's last 10 minutes started one per 20 s with half the CPU idle). Until
// 2026-11-30 the gate was the CPU pressure (/proc/pressure/cpu "some
// avg10" at most 30 %, then 45 %): on this project's 2-core machines it
// read 35–50 % with a third to half of the CPU idle, and the tests ran two
// at a time while half the CPU idled (10 s samples of both over make test
// runs).
var lanes = newScheduler(slotsFromEnv(), 500*time.Millisecond, time.Minute).withLoad(cpuBusy, 70, 10*time.Second)

func init() { lanes.hostHolder = meter.holdHost }

func slotsFromEnv() int {
	n, err := strconv.Atoi(os.Getenv("HYPERSHIFT_E2E_SLOTS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// scheduler starts waiting tests when there is room for them and the host
// is free, longest first. It starts dispatching a moment (gather) after
// the first test asks, so that the tests released together by t.Parallel
// all queue.
type scheduler struct {
	mu       sync.Mutex
	capacity int // tests at once
	running  []*waiter
	hostBusy bool
	gather   time.Duration
	// patience is how long a quiet test that has too many tests running for
	// it lets others by before it holds the line for them.
	patience time.Duration
	asked    bool // a test has asked: the gathering moment runs
	started  bool // the moment is over: dispatch
	waiting  []*waiter

	// A test starts beside others only while the CPU is idle enough: its
	// load (cpuBusy) is at most maxLoad, and spacing has passed since the
	// last start, so that its start-up shows in the reading. Unknown load:
	// one test at a time.
	load      func() (percent float64, known bool)
	maxLoad   float64
	spacing   time.Duration
	lastStart time.Time
	recheck   *time.Timer // armed while a test waits for the CPU to calm

	// hostHolder, when set, is told the whole-host test that runs ("" when
	// none).
	hostHolder func(test string)
}

type waiter struct {
	name string
	cost time.Duration
	// maxBeside is how many other tests may run beside it: one for a quiet
	// test, the capacity less one for the others.
	maxBeside int
	// quieting: the running test waits to become quiet (quieten); no
	// test starts meanwhile. quiet is closed when it is.
	quieting bool
	quiet    chan struct{}
	host     bool
	since    time.Time
	ready    chan struct{}
	// When it started: how many tests ran, and the CPU's load.
	beside int
	load   float64
}

func newScheduler(capacity int, gather, patience time.Duration) *scheduler {
	return &scheduler{capacity: max(capacity, 1), gather: gather, patience: patience}
}

// withLoad makes s start a test beside others only while load reads at
// most maxPercent, spacing after the last start.
func (s *scheduler) withLoad(load func() (float64, bool), maxPercent float64, spacing time.Duration) *scheduler {
	s.load, s.maxLoad, s.spacing = load, maxPercent, spacing
	return s
}

// cpuBusy is the share of the CPU, in percent, that was busy (all but
// idle and iowait in /proc/stat) over about the last 10 s, from readings
// it keeps: against the newest reading at least 10 s old, else the oldest
// at least 2 s old; with none yet it says 100, and the scheduler reads
// again soon. Known unless /proc/stat cannot be read.
func cpuBusy() (float64, bool) {
	return cpuReadings.busy(time.Now(), readCPUStat)
}

var cpuReadings cpuHistory

type cpuReading struct {
	at          time.Time
	busy, total uint64
}

type cpuHistory struct {
	mu       sync.Mutex
	readings []cpuReading
}

func (h *cpuHistory) busy(now time.Time, read func() (busy, total uint64, ok bool)) (float64, bool) {
	b, tot, ok := read()
	if !ok {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The last 30 s are enough.
	h.readings = slices.DeleteFunc(h.readings, func(r cpuReading) bool { return now.Sub(r.at) > 30*time.Second })
	var ref *cpuReading
	for i := len(h.readings) - 1; i >= 0 && ref == nil; i-- {
		if now.Sub(h.readings[i].at) >= 10*time.Second {
			ref = &h.readings[i]
		}
	}
	if ref == nil && len(h.readings) > 0 && now.Sub(h.readings[0].at) >= 2*time.Second {
		ref = &h.readings[0]
	}
	var percent float64 = 100
	if ref != nil && tot > ref.total {
		percent = float64(b-ref.busy) / float64(tot-ref.total) * 100
	}
	h.readings = append(h.readings, cpuReading{at: now, busy: b, total: tot})
	return percent, true
}

// readCPUStat reads the busy and total jiffies of the "cpu" line of
// /proc/stat.
func readCPUStat() (busy, total uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, 0, false
	}
	for i, f := range fields[1:] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, true
}

// crowded reports whether the CPU is too busy for one more test beside
// those running, and arms a re-check when it is.
func (s *scheduler) crowded() bool {
	if s.load == nil || len(s.running) == 0 {
		return false
	}
	busy := time.Since(s.lastStart) < s.spacing
	if !busy {
		p, known := s.load()
		if !known {
			return true // one at a time: a test's end dispatches again
		}
		busy = p > s.maxLoad
	}
	if busy && s.recheck == nil {
		s.recheck = time.AfterFunc(recheckEvery, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.recheck = nil
			s.dispatch()
		})
	}
	return busy
}

// recheckEvery is how often a scheduler that waits for the CPU to calm
// reads the load again.
var recheckEvery = 2 * time.Second

// enter marks t parallel and blocks until there is room for it (and the
// host is free); its place is given back when t and its cleanups are done.
func (s *scheduler) enter(t *testing.T, quiet, host bool) {
	t.Helper()
	t.Parallel()
	start := time.Now()
	w := s.acquire(t.Name(), time.Duration(costs[t.Name()])*time.Second, quiet, host)
	// go test counts this wait in the test's time; the report takes it
	// off (hack/testreport reads this line).
	t.Logf("lanes: queued %.1fs", time.Since(start).Seconds())
	if w.beside > 0 {
		t.Logf("lanes: started beside %d other tests, the CPU %.0f%% busy", w.beside, w.load)
	}
	// Registered first, so it runs after the test's own cleanups: a node
	// is torn down before the next test may take the host.
	t.Cleanup(func() { s.release(w) })
}

func (s *scheduler) acquire(name string, cost time.Duration, quiet, host bool) *waiter {
	w := &waiter{name: name, cost: cost, maxBeside: s.capacity - 1, host: host, since: time.Now(), ready: make(chan struct{})}
	if quiet {
		w.maxBeside = min(w.maxBeside, 1)
	}
	s.mu.Lock()
	s.waiting = append(s.waiting, w)
	if !s.asked {
		s.asked = true
		time.AfterFunc(s.gather, func() {
			s.mu.Lock()
			s.started = true
			s.dispatch()
			s.mu.Unlock()
		})
	}
	s.dispatch()
	s.mu.Unlock()
	<-w.ready
	return w
}

// quieten makes the running test name quiet (one test beside it at most)
// once no more than one other runs, holding back every start until then;
// undo gives it back its usual room. Tests that quieten at once wait for
// the others: as many of them as the capacity would wait for ever (one
// test uses it).
func (s *scheduler) quieten(name string) (undo func()) {
	s.mu.Lock()
	i := slices.IndexFunc(s.running, func(r *waiter) bool { return r.name == name })
	if i < 0 || s.running[i].maxBeside <= 1 {
		s.mu.Unlock()
		return func() {} // not run by the scheduler, or quiet already
	}
	w := s.running[i]
	w.quieting, w.quiet = true, make(chan struct{})
	s.settleQuieting()
	s.mu.Unlock()
	<-w.quiet
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		w.maxBeside = s.capacity - 1
		s.dispatch()
	}
}

// settleQuieting makes quiet the running tests that wait for it and have
// at most one other beside them; s.mu is held.
func (s *scheduler) settleQuieting() {
	for _, w := range s.running {
		if w.quieting && len(s.running)-1 <= 1 {
			w.quieting, w.maxBeside = false, 1
			close(w.quiet)
		}
	}
}

func (s *scheduler) release(w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running = slices.DeleteFunc(s.running, func(r *waiter) bool { return r == w })
	s.settleQuieting()
	if w.host {
		s.hostBusy = false
		s.onHost("")
	}
	s.dispatch()
}

func (s *scheduler) onHost(test string) {
	if s.hostHolder != nil {
		s.hostHolder(test)
	}
}

// fits reports whether w may start now: one more test keeps every running
// test, and w, within the number of tests it allows beside it.
func (s *scheduler) fits(w *waiter) bool {
	n := len(s.running) // beside each, once w runs
	if n > w.maxBeside {
		return false
	}
	for _, r := range s.running {
		if n > r.maxBeside {
			return false
		}
	}
	return true
}

// dispatch starts waiting tests: those that need the host first (they run
// one after another, so their chain is the longest), then the others,
// longest first — quiet ones first while a quiet test runs. A test that waits for the host lets the next one by, and
// so does a quiet test that waits for fewer tests to run, for its
// patience; then it holds the line, so that it is not passed over for
// ever.
func (s *scheduler) dispatch() {
	if !s.started || len(s.waiting) == 0 {
		return
	}
	// While a quiet test runs, at most one test runs beside it: a quiet
	// one goes first, since two quiet tests together hold back no more
	// than one does.
	quietRunning := slices.ContainsFunc(s.running, func(r *waiter) bool { return r.maxBeside <= 1 })
	sort.SliceStable(s.waiting, func(i, j int) bool {
		a, b := s.waiting[i], s.waiting[j]
		if a.host != b.host {
			return a.host
		}
		if aq, bq := a.maxBeside <= 1, b.maxBeside <= 1; quietRunning && aq != bq {
			return aq
		}
		return a.cost > b.cost
	})
	var still []*waiter
	// A running test that waits to become quiet holds every start back.
	blocked := slices.ContainsFunc(s.running, func(r *waiter) bool { return r.quieting })
	for _, w := range s.waiting {
		switch {
		case blocked || (w.host && s.hostBusy):
			still = append(still, w)
		case !s.fits(w):
			still = append(still, w)
			// Too many run for this test itself: holding the line lets
			// them drain to what it allows beside it.
			blocked = len(s.running) > w.maxBeside && time.Since(w.since) > s.patience
		case s.crowded():
			still = append(still, w)
		default:
			if w.host {
				s.hostBusy = true
				s.onHost(w.name)
			}
			w.beside = len(s.running)
			if s.load != nil {
				w.load, _ = s.load()
			}
			s.running = append(s.running, w)
			s.lastStart = time.Now()
			close(w.ready)
		}
	}
	s.waiting = still
}

// TestSchedulerOrder: the longest test starts first, a test waiting for
// the host lets shorter ones by, a quiet test has one test beside it at
// most, and no more than the capacity (and one host test) ever run.
func TestSchedulerOrder(t *testing.T) {
	s := newScheduler(3, 50*time.Millisecond, 0)
	type req struct {
		name        string
		cost        time.Duration
		quiet, host bool
	}
	reqs := []req{
		{"hostShort", 5, false, true},
		{"hostLong", 9, false, true},
		{"small", 1, false, false},
		{"quiet", 7, true, false},
		{"medium", 3, false, false},
	}
	got := make(chan *waiter, len(reqs))
	for _, r := range reqs {
		go func() { got <- s.acquire(r.name, r.cost, r.quiet, r.host) }()
	}
	byName := map[string]*waiter{}
	take := func(want ...string) {
		t.Helper()
		var names []string
		for range want {
			select {
			case w := <-got:
				names = append(names, w.name)
				byName[w.name] = w
			case <-time.After(5 * time.Second):
				t.Fatalf("started %v, want %v", names, want)
			}
		}
		sort.Strings(names)
		sort.Strings(want)
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("started %v, want %v", names, want)
		}
		select {
		case w := <-got:
			t.Fatalf("%s started with no room for it", w.name)
		case <-time.After(100 * time.Millisecond):
		}
	}
	take("hostLong", "quiet")
	s.mu.Lock()
	if len(s.running) != 2 || !s.hostBusy {
		t.Errorf("%d running, host busy %v; want 2 and true", len(s.running), s.hostBusy)
	}
	s.mu.Unlock()
	s.release(byName["quiet"])
	take("medium", "small")
	s.release(byName["hostLong"])
	take("hostShort")
}

// TestSchedulerHostFirst: a test that needs the host starts before a
// longer one that does not, since the host's tests run one after another.
func TestSchedulerHostFirst(t *testing.T) {
	s := newScheduler(1, 50*time.Millisecond, time.Hour)
	got := make(chan string, 2)
	go func() { s.acquire("long", 10, false, false); got <- "long" }()
	go func() { s.acquire("host", 1, false, true); got <- "host" }()
	select {
	case first := <-got:
		if first != "host" {
			t.Fatalf("%s started first, want the host test", first)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no test started")
	}
	select {
	case second := <-got:
		t.Fatalf("%s started beside the host test with no room for it", second)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestSchedulerPatience: a quiet test that finds two tests running lets a
// third by until it has waited its patience; then it holds the line and
// starts once one test runs.
func TestSchedulerPatience(t *testing.T) {
	s := newScheduler(3, 10*time.Millisecond, 300*time.Millisecond)
	a := s.acquire("a", 9, false, false)
	b := s.acquire("b", 9, false, false)
	got := make(chan *waiter, 3)
	go func() { got <- s.acquire("quiet", 5, true, false) }()
	time.Sleep(50 * time.Millisecond) // quiet queues first
	go func() { got <- s.acquire("early", 1, false, false) }()
	early := <-got
	if early.name != "early" {
		t.Fatalf("%s started, want the other test let by", early.name)
	}
	time.Sleep(400 * time.Millisecond) // past quiet's patience
	go func() { got <- s.acquire("late", 1, false, false) }()
	time.Sleep(100 * time.Millisecond)
	s.release(early) // two run: quiet still waits, and holds the line
	select {
	case w := <-got:
		t.Fatalf("%s started, want the quiet test to hold the line past its patience", w.name)
	case <-time.After(100 * time.Millisecond):
	}
	s.release(a)
	if next := <-got; next.name != "quiet" {
		t.Fatalf("%s started, want quiet", next.name)
	}
	select {
	case w := <-got:
		t.Fatalf("%s started beside a quiet test that has one beside it already", w.name)
	case <-time.After(100 * time.Millisecond):
	}
	s.release(b)
	if next := <-got; next.name != "late" {
		t.Fatalf("%s started, want late", next.name)
	}
}

// TestSchedulerQuietBesideQuiet: two quiet tests run side by side (each has
// one beside it), the second without waiting for the first, whether the
// first holds the host or not; a third test waits until one of them ends.
func TestSchedulerQuietBesideQuiet(t *testing.T) {
	for name, host := range map[string]bool{"beside the whole-host test": true, "beside a quiet test": false} {
		t.Run(name, func(t *testing.T) {
			s := newScheduler(3, 10*time.Millisecond, 0)
			first := s.acquire("first", 9, true, host)
			got := make(chan *waiter, 2)
			go func() { got <- s.acquire("second", 5, true, false) }()
			var second *waiter
			select {
			case second = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("the second quiet test waited while one test ran")
			}
			go func() { got <- s.acquire("third", 1, false, false) }()
			select {
			case w := <-got:
				t.Fatalf("%s started beside two quiet tests", w.name)
			case <-time.After(100 * time.Millisecond):
			}
			s.release(first)
			select {
			case w := <-got:
				if w.beside != 1 {
					t.Errorf("third started beside %d tests, want 1", w.beside)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the third test did not start when a quiet test ended")
			}
			s.release(second)
		})
	}
}

// TestSchedulerWaitsForIdleCPU: with slots free, a test starts beside a
// running one only once the CPU load is low and the spacing has
// passed; the first test starts whatever the load; an unknown load
// runs one test at a time.
func TestSchedulerWaitsForIdleCPU(t *testing.T) {
	defer func(d time.Duration) { recheckEvery = d }(recheckEvery)
	recheckEvery = 10 * time.Millisecond
	var mu sync.Mutex
	load, known := 90.0, true
	read := func() (float64, bool) {
		mu.Lock()
		defer mu.Unlock()
		return load, known
	}
	set := func(p float64, k bool) {
		mu.Lock()
		defer mu.Unlock()
		load, known = p, k
	}
	s := newScheduler(3, 10*time.Millisecond, time.Hour).withLoad(read, 30, 200*time.Millisecond)
	got := make(chan *waiter, 3)
	for _, name := range []string{"a", "b", "c"} {
		go func() { got <- s.acquire(name, 1, false, false) }()
	}
	within := func(d time.Duration) *waiter {
		select {
		case w := <-got:
			return w
		case <-time.After(d):
			return nil
		}
	}
	first := within(5 * time.Second)
	if first == nil {
		t.Fatal("the first test did not start under high load")
	}
	if w := within(500 * time.Millisecond); w != nil {
		t.Fatalf("%s started beside a running test at 90%% load", w.name)
	}
	set(10, true)
	second := within(5 * time.Second)
	if second == nil || second.beside != 1 {
		t.Fatalf("at 10%% load: %+v, want a second test started beside one", second)
	}
	start := time.Now()
	third := within(5 * time.Second)
	if third == nil || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("the third test started %v after the second, want the spacing (200ms) between them", time.Since(start))
	}
	for _, w := range []*waiter{first, second, third} {
		s.release(w)
	}

	// Unknown load: one after another.
	set(0, false)
	for _, name := range []string{"d", "e"} {
		go func() { got <- s.acquire(name, 1, false, false) }()
	}
	d := within(5 * time.Second)
	if d == nil {
		t.Fatal("no test started with nothing running")
	}
	if w := within(500 * time.Millisecond); w != nil {
		t.Fatalf("%s started beside another with the load unknown", w.name)
	}
	s.release(d)
	if within(5*time.Second) == nil {
		t.Fatal("the next test did not start when the first ended")
	}
}

// TestSchedulerQuietNow: a running test that turns quiet waits until at
// most one other runs, no test starts meanwhile nor beside the two after,
// and once it is done being quiet the others start again.
func TestSchedulerQuietNow(t *testing.T) {
	s := newScheduler(3, 10*time.Millisecond, time.Hour)
	long := s.acquire("long", 9, false, false)
	b := s.acquire("b", 5, false, false)
	c := s.acquire("c", 5, false, false)
	quiet := make(chan func())
	go func() { quiet <- s.quieten("long") }()
	select {
	case <-quiet:
		t.Fatal("quiet with two others running")
	case <-time.After(100 * time.Millisecond):
	}
	got := make(chan *waiter, 1)
	s.release(b) // a place is free, but long waits to be quiet: nothing starts
	go func() { got <- s.acquire("d", 1, false, false) }()
	var undo func()
	select {
	case undo = <-quiet:
	case <-time.After(5 * time.Second):
		t.Fatal("not quiet with one other running")
	}
	select {
	case w := <-got:
		t.Fatalf("%s started beside a quiet test that has one beside it", w.name)
	case <-time.After(100 * time.Millisecond):
	}
	undo()
	select {
	case w := <-got:
		if w.beside != 2 {
			t.Errorf("d started beside %d tests, want 2", w.beside)
		}
		s.release(w)
	case <-time.After(5 * time.Second):
		t.Fatal("d did not start once long was done being quiet")
	}
	s.release(c)
	s.release(long)
	if undo := s.quieten("gone"); undo == nil {
		t.Error("quieten of a test the scheduler does not run returned no undo")
	}
}

// TestSchedulerPairsQuietTests: beside a running quiet test, a waiting
// quiet test starts before a longer test that is not quiet: two quiet
// tests together hold back no more tests than one.
func TestSchedulerPairsQuietTests(t *testing.T) {
	// No dispatch until both wait: the gathering moment never ends by
	// itself, and the quiet test "first" runs already.
	s := newScheduler(3, time.Hour, time.Hour)
	first := &waiter{name: "first", maxBeside: 1, ready: make(chan struct{})}
	s.mu.Lock()
	s.asked, s.running = true, []*waiter{first}
	s.mu.Unlock()
	got := make(chan *waiter, 2)
	go func() { got <- s.acquire("long", 8, false, false) }()
	go func() { got <- s.acquire("quiet", 1, true, false) }()
	for {
		s.mu.Lock()
		n := len(s.waiting)
		if n == 2 {
			s.started = true
			s.dispatch()
		}
		s.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case w := <-got:
		if w.name != "quiet" {
			t.Fatalf("%s started beside the quiet test, want the other quiet test", w.name)
		}
		s.release(w)
	case <-time.After(5 * time.Second):
		t.Fatal("no test started beside the quiet test")
	}
	s.release(first)
	if w := <-got; w.name != "long" {
		t.Fatalf("%s started, want long", w.name)
	}
}

// TestCPUBusyOverTheLastSeconds: the load is the busy share between the
// reading and the newest one at least 10 s before it (else the oldest at
// least 2 s before), 100 with none, and readings older than 30 s go.
func TestCPUBusyOverTheLastSeconds(t *testing.T) {
	var h cpuHistory
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	reading := func(busy, total uint64) func() (uint64, uint64, bool) {
		return func() (uint64, uint64, bool) { return busy, total, true }
	}
	for _, step := range []struct {
		at          int
		busy, total uint64
		want        float64
	}{
		{0, 0, 0, 100},         // no history
		{1, 50, 100, 100},      // nothing 2 s old
		{3, 80, 200, 40},       // against t=0: 80 of 200
		{12, 180, 1100, 13},    // against t=1, the newest 10 s old: 130 of 1000
		{14, 380, 1300, 27.27}, // against t=3: 300 of 1100
		{50, 1380, 2300, 100},  // all older than 30 s are gone
	} {
		got, known := h.busy(at(step.at), reading(step.busy, step.total))
		if !known || math.Abs(got-step.want) > 0.01 {
			t.Errorf("at %d s: %.1f%% (known %v), want %.1f%%", step.at, got, known, step.want)
		}
	}
	if _, known := h.busy(t0, func() (uint64, uint64, bool) { return 0, 0, false }); known {
		t.Error("an unreadable /proc/stat is known")
	}
}
