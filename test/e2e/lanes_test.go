package e2e

import (
	"flag"
	"fmt"
	"os"
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
//     busy CPU could break: it takes two of the CPU slots.
//   - wholeHost(t): it needs what the host has one of — a real node (a
//     kubelet on port 10250, containerd, kube-proxy, the CNI bridge, host
//     iptables), a network namespace with its veth on the host, or a
//     before/after diff of the host's state: one such test at a time,
//     beside the others.
//   - quietWholeHost(t): both.
//
// The tests run side by side on at most $HYPERSHIFT_E2E_SLOTS CPU slots
// (1: one after another; make test gives 3, so a quiet test runs beside
// one other at most), the whole-host ones first, then the longest first
// (costs); and a test starts beside others only while the CPU is idle
// enough (withPressure), whatever else runs on the machine: the other
// packages' tests run beside these.
func ownDirAndPorts(t *testing.T) { lanes.enter(t, 1, false) }

func quiet(t *testing.T) { lanes.enter(t, 2, false) }

func wholeHost(t *testing.T) { lanes.enter(t, 1, true) }

func quietWholeHost(t *testing.T) { lanes.enter(t, 2, true) }

// costs is how long each test ran, in seconds, beside others on a 2-core
// machine (bin/test-artifacts/test-report.txt of 2026-11-29; "est." where
// that run did not get to the test). It only orders the start, longest
// first, so that a long test does not start last; a test missing here
// starts after those listed.
var costs = map[string]int{
	"TestKubeRuntime":                      900, // est.
	"TestMigrateCluster":                   540,
	"TestControlPlaneUpgrade":              420,
	"TestWholeCluster":                     330,
	"TestCertificateRenewal":               320,
	"TestBackupRestore":                    300, // est.
	"TestCARotation":                       250, // est.
	"TestCARotationRealNode":               250, // est.
	"TestStartQueue":                       240,
	"TestAddons":                           220,
	"TestIdleWake":                         200,
	"TestBackupRestoreSecondPlane":         200, // est.
	"TestBackupRestoreHighlyAvailable":     200, // est.
	"TestCARotationHighlyAvailable":        200, // est.
	"TestHighlyAvailableUpgrade":           190,
	"TestNoneNodes":                        180,
	"TestNodePoolUpgrade":                  170,
	"TestUpgradeWhileHibernated":           160,
	"TestKonnectivityOneWayFirewall":       150, // est.
	"TestMachines":                         120, // est.
	"TestHostedClusters":                   150, // est.
	"TestNodePools":                        130,
	"TestHibernation":                      120,
	"TestRealNodeInPlaceUpgrade":           120,
	"TestSingleReplicaRecovers":            120,
	"TestHighlyAvailableChaos":             110,
	"TestKonnectivityServer":               100,
	"TestWatchCacheKeptForWhatNodesUse":    100,
	"TestDataPlane":                        100, // est.
	"TestManagementPlaneLoss":              95,
	"TestFleetMetrics":                     80,
	"TestDashboard":                        70,
	"TestDumpCluster":                      60,
	"TestEndpointHostAddress":              60, // est.
	"TestSingleProcessControlPlane":        50,
	"TestSchedulerStartsWithFirstNodePool": 45,
	"TestReleases":                         30,
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
	if _, known := cpuPressure(); !known {
		fmt.Fprintln(os.Stderr, "lanes: /proc/pressure/cpu is not readable: the end-to-end tests run one at a time")
	}
	code := m.Run()
	fmt.Fprintln(os.Stderr, spawns.String())
	if err := stopSharedPlane(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// packageTempDir holds what the package's tests build once and share.
var packageTempDir string

var lanes = newScheduler(slotsFromEnv(), 500*time.Millisecond, time.Minute).withPressure(cpuPressure, 30, 20*time.Second)

func slotsFromEnv() int {
	n, err := strconv.Atoi(os.Getenv("HYPERSHIFT_E2E_SLOTS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// scheduler hands out CPU slots and the host to waiting tests, longest
// first. It starts dispatching a moment (gather) after the first test
// asks, so that the tests released together by t.Parallel all queue.
type scheduler struct {
	mu       sync.Mutex
	slots    int // free CPU slots
	capacity int
	hostBusy bool
	// pinned is the CPU slots that running tests hold which holding the
	// line frees no sooner: the whole-host test's and the multi-slot ones'.
	pinned int
	gather time.Duration
	// patience is how long a test that needs more CPU slots than are free
	// lets others by before it holds the line for them.
	patience time.Duration
	asked    bool // a test has asked: the gathering moment runs
	started  bool // the moment is over: dispatch
	waiting  []*waiter

	// A test starts beside others only while the CPU is idle enough: the
	// pressure (the share of the last 10 s in which a task waited for a
	// CPU, /proc/pressure/cpu) is at most maxPressure, and spacing has
	// passed since the last start, so that its start-up shows in the
	// reading. Unknown pressure: one test at a time.
	pressure    func() (percent float64, known bool)
	maxPressure float64
	spacing     time.Duration
	running     int
	lastStart   time.Time
	recheck     *time.Timer // armed while a test waits for the CPU to calm
}

type waiter struct {
	name  string
	cost  time.Duration
	slots int
	host  bool
	since time.Time
	ready chan struct{}
	// When it started: how many tests ran, and the CPU pressure.
	beside   int
	pressure float64
}

func newScheduler(capacity int, gather, patience time.Duration) *scheduler {
	return &scheduler{slots: capacity, capacity: capacity, gather: gather, patience: patience}
}

// withPressure makes s start a test beside others only while pressure
// reads at most maxPercent, spacing after the last start.
func (s *scheduler) withPressure(pressure func() (float64, bool), maxPercent float64, spacing time.Duration) *scheduler {
	s.pressure, s.maxPressure, s.spacing = pressure, maxPercent, spacing
	return s
}

// cpuPressure reads the "some avg10" of /proc/pressure/cpu: the share of
// the last 10 s, in percent, in which a runnable task waited for a CPU.
func cpuPressure() (float64, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for _, field := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(field, "avg10="); ok {
			p, err := strconv.ParseFloat(v, 64)
			return p, err == nil
		}
	}
	return 0, false
}

// crowded reports whether the CPU is too busy for one more test beside
// those running, and arms a re-check when it is.
func (s *scheduler) crowded() bool {
	if s.pressure == nil || s.running == 0 {
		return false
	}
	busy := time.Since(s.lastStart) < s.spacing
	if !busy {
		p, known := s.pressure()
		if !known {
			return true // one at a time: a test's end dispatches again
		}
		busy = p > s.maxPressure
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
// reads the pressure again.
var recheckEvery = 2 * time.Second

// enter marks t parallel and blocks until its slots (and the host) are
// free; they are given back when t and its cleanups are done.
func (s *scheduler) enter(t *testing.T, slots int, host bool) {
	t.Helper()
	t.Parallel()
	start := time.Now()
	w := s.acquire(t.Name(), time.Duration(costs[t.Name()])*time.Second, slots, host)
	// go test counts this wait in the test's time; the report takes it
	// off (hack/testreport reads this line).
	t.Logf("lanes: queued %.1fs", time.Since(start).Seconds())
	if w.beside > 0 {
		t.Logf("lanes: started beside %d other tests, the CPU pressure at %.0f%%", w.beside, w.pressure)
	}
	// Registered first, so it runs after the test's own cleanups: a node
	// is torn down before the next test may take the host.
	t.Cleanup(func() { s.release(w) })
}

func (s *scheduler) acquire(name string, cost time.Duration, slots int, host bool) *waiter {
	w := &waiter{name: name, cost: cost, slots: min(slots, s.capacity), host: host, since: time.Now(), ready: make(chan struct{})}
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

func (s *scheduler) release(w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots += w.slots
	s.running--
	if w.host || w.slots > 1 {
		s.pinned -= w.slots
	}
	if w.host {
		s.hostBusy = false
	}
	s.dispatch()
}

// dispatch starts waiting tests: those that need the host first (they run
// one after another, so their chain is the longest), then the others,
// longest first. A test that waits for the host lets the next one by, and
// so does one that waits for CPU slots, for its patience; then it holds the
// line, so that a two-slot test is not passed over for ever.
func (s *scheduler) dispatch() {
	if !s.started || len(s.waiting) == 0 {
		return
	}
	sort.SliceStable(s.waiting, func(i, j int) bool {
		a, b := s.waiting[i], s.waiting[j]
		if a.host != b.host {
			return a.host
		}
		return a.cost > b.cost
	})
	var still []*waiter
	blocked := false
	for _, w := range s.waiting {
		switch {
		case blocked || (w.host && s.hostBusy) || (w.slots <= s.slots && s.crowded()):
			still = append(still, w)
		case w.slots > s.slots:
			still = append(still, w)
			// Holding the line only helps when the slots of the one-slot
			// tests it holds back will do: not while the whole-host test
			// or another multi-slot test holds them.
			blocked = time.Since(w.since) > s.patience && w.slots <= s.capacity-s.pinned
		default:
			s.slots -= w.slots
			if w.host {
				s.hostBusy = true
			}
			if w.host || w.slots > 1 {
				s.pinned += w.slots
			}
			w.beside = s.running
			if s.pressure != nil {
				w.pressure, _ = s.pressure()
			}
			s.running++
			s.lastStart = time.Now()
			close(w.ready)
		}
	}
	s.waiting = still
}

// TestSchedulerOrder: the longest test starts first, a test waiting for
// the host lets shorter ones by, one waiting for CPU slots holds the line,
// and no more than the slots (and one host test) are ever taken.
func TestSchedulerOrder(t *testing.T) {
	s := newScheduler(3, 50*time.Millisecond, 0)
	type req struct {
		name  string
		cost  time.Duration
		slots int
		host  bool
	}
	reqs := []req{
		{"hostShort", 5, 1, true},
		{"hostLong", 9, 1, true},
		{"small", 1, 1, false},
		{"double", 7, 2, false},
		{"medium", 3, 1, false},
	}
	got := make(chan *waiter, len(reqs))
	for _, r := range reqs {
		go func() { got <- s.acquire(r.name, r.cost, r.slots, r.host) }()
	}
	next := func() string {
		t.Helper()
		select {
		case w := <-got:
			return w.name
		case <-time.After(5 * time.Second):
			t.Fatal("no test started")
			return ""
		}
	}
	none := func() {
		t.Helper()
		select {
		case w := <-got:
			t.Fatalf("%s started with no room for it", w.name)
		case <-time.After(100 * time.Millisecond):
		}
	}
	take := func(want ...string) {
		t.Helper()
		var names []string
		for range want {
			n := next()
			names = append(names, n)
		}
		sort.Strings(names)
		sort.Strings(want)
		if fmt.Sprint(names) != fmt.Sprint(want) {
			t.Fatalf("started %v, want %v", names, want)
		}
		none()
	}
	byName := map[string]*waiter{}
	take("hostLong", "double")
	s.mu.Lock()
	if s.slots != 0 || !s.hostBusy {
		t.Errorf("slots %d free, host busy %v; want 0 and true", s.slots, s.hostBusy)
	}
	s.mu.Unlock()
	// Release by name: the scheduler only needs the waiter's slots and host.
	byName["double"] = &waiter{slots: 2}
	s.release(byName["double"])
	take("medium", "small")
	byName["hostLong"] = &waiter{slots: 1, host: true}
	s.release(byName["hostLong"])
	take("hostShort")
}

// TestSchedulerHostFirst: a test that needs the host starts before a
// longer one that does not, since the host's tests run one after another.
func TestSchedulerHostFirst(t *testing.T) {
	s := newScheduler(2, 50*time.Millisecond, time.Hour)
	got := make(chan string, 2)
	go func() { s.acquire("long", 10, 2, false); got <- "long" }()
	go func() { s.acquire("host", 1, 1, true); got <- "host" }()
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

// TestSchedulerPatience: a test that needs two slots while one is free lets
// a one-slot test by until it has waited its patience; then it holds the
// line and starts when the slots are free.
func TestSchedulerPatience(t *testing.T) {
	s := newScheduler(2, 10*time.Millisecond, 300*time.Millisecond)
	running := s.acquire("running", 9, 1, false)
	got := make(chan string, 3)
	go func() { s.acquire("double", 5, 2, false); got <- "double" }()
	time.Sleep(50 * time.Millisecond) // double queues first
	go func() { s.acquire("early", 1, 1, false); got <- "early" }()
	if first := <-got; first != "early" {
		t.Fatalf("%s started, want the one-slot test let by", first)
	}
	early := &waiter{slots: 1}
	time.Sleep(400 * time.Millisecond) // past double's patience
	go func() { s.acquire("late", 1, 1, false); got <- "late" }()
	time.Sleep(100 * time.Millisecond)
	s.release(early) // one slot free: double still waits for two, and holds the line
	select {
	case name := <-got:
		t.Fatalf("%s started, want double to hold the line past its patience", name)
	case <-time.After(100 * time.Millisecond):
	}
	s.release(running)
	if next := <-got; next != "double" {
		t.Fatalf("%s started, want double", next)
	}
}

// TestSchedulerNoWaitBehindPinnedSlots: a two-slot test that has waited
// past its patience does not hold the line when only the slots of the
// whole-host test, or of another two-slot test, would let it run: the
// one-slot tests go on beside.
func TestSchedulerNoWaitBehindPinnedSlots(t *testing.T) {
	for name, host := range map[string]bool{"behind the whole-host test": true, "behind a quiet test": false} {
		t.Run(name, func(t *testing.T) {
			s := newScheduler(3, 10*time.Millisecond, 0)
			s.acquire("running", 9, 2, host)
			got := make(chan string, 2)
			go func() { s.acquire("double", 5, 2, false); got <- "double" }()
			time.Sleep(50 * time.Millisecond)
			go func() { s.acquire("single", 1, 1, false); got <- "single" }()
			select {
			case name := <-got:
				if name != "single" {
					t.Fatalf("%s started, want the one-slot test", name)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the one-slot test waited behind a test that cannot run beside the running one")
			}
		})
	}
}

// TestSchedulerWaitsForIdleCPU: with slots free, a test starts beside a
// running one only once the CPU pressure is low and the spacing has
// passed; the first test starts whatever the pressure; an unknown pressure
// runs one test at a time.
func TestSchedulerWaitsForIdleCPU(t *testing.T) {
	defer func(d time.Duration) { recheckEvery = d }(recheckEvery)
	recheckEvery = 10 * time.Millisecond
	var mu sync.Mutex
	pressure, known := 90.0, true
	read := func() (float64, bool) {
		mu.Lock()
		defer mu.Unlock()
		return pressure, known
	}
	set := func(p float64, k bool) {
		mu.Lock()
		defer mu.Unlock()
		pressure, known = p, k
	}
	s := newScheduler(3, 10*time.Millisecond, time.Hour).withPressure(read, 30, 200*time.Millisecond)
	got := make(chan *waiter, 3)
	for _, name := range []string{"a", "b", "c"} {
		go func() { got <- s.acquire(name, 1, 1, false) }()
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
		t.Fatal("the first test did not start under high pressure")
	}
	if w := within(500 * time.Millisecond); w != nil {
		t.Fatalf("%s started beside a running test at 90%% pressure", w.name)
	}
	set(10, true)
	second := within(5 * time.Second)
	if second == nil || second.beside != 1 {
		t.Fatalf("at 10%% pressure: %+v, want a second test started beside one", second)
	}
	start := time.Now()
	third := within(5 * time.Second)
	if third == nil || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("the third test started %v after the second, want the spacing (200ms) between them", time.Since(start))
	}
	for _, w := range []*waiter{first, second, third} {
		s.release(w)
	}

	// Unknown pressure: one after another.
	set(0, false)
	for _, name := range []string{"d", "e"} {
		go func() { got <- s.acquire(name, 1, 1, false) }()
	}
	d := within(5 * time.Second)
	if d == nil {
		t.Fatal("no test started with nothing running")
	}
	if w := within(500 * time.Millisecond); w != nil {
		t.Fatalf("%s started beside another with the pressure unknown", w.name)
	}
	s.release(d)
	if within(5*time.Second) == nil {
		t.Fatal("the next test did not start when the first ended")
	}
}
