package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent), or of
// the build output that `go test -json` interleaves (ImportPath set).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
	ImportPath  string
}

type testKey struct{ pkg, test string }

type testResult struct {
	testKey
	action  string // pass, fail or skip
	elapsed float64
	queued  float64 // of elapsed, the time it waited to run (queuedLine)
	reason  string  // why a skipped test skipped
}

// queuedLine is what a test logs of the time it waited for others before
// it ran (test/e2e's lanes): go test counts it in the test's time, the
// report does not.
var queuedLine = regexp.MustCompile(`lanes: queued ([0-9.]+)s`)

func queuedIn(lines []string) float64 {
	for _, l := range lines {
		if m := queuedLine.FindStringSubmatch(l); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				return v
			}
		}
	}
	return 0
}

type packageResult struct {
	name    string
	start   time.Time
	action  string
	elapsed float64
	tests   int
	// cpu is the package's "CPU by test" table (test/e2e's CPU meter):
	// its heading line and the indented lines after it.
	cpu []string
	// said: the stream had go test's own line for the package's result
	// ("ok  \tpkg\t…"); a binary run through test2json alone has none.
	said bool
}

// summary follows one `go test -json` stream.
type summary struct {
	out      io.Writer
	first    time.Time
	output   map[testKey][]string // a running test's output, kept until it ends
	tests    []testResult
	packages map[string]*packageResult
	builds   []string // packages that did not build
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, output: map[testKey][]string{}, packages: map[string]*packageResult{}}
}

// read consumes the streams (one per `go test` run, read side by side and
// handled a whole line at a time), copying every line to raw and printing
// what a person should see as it comes.
func (s *summary) read(raw io.Writer, ins ...io.Reader) error {
	lines := make(chan []byte)
	errs := make(chan error, len(ins))
	for _, in := range ins {
		go func() {
			sc := bufio.NewScanner(in)
			sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
			for sc.Scan() {
				lines <- bytes.Clone(sc.Bytes())
			}
			err := sc.Err()
			if err != nil {
				// The writer must not block on a stream no longer read.
				_, _ = io.Copy(io.Discard, in)
			}
			errs <- err
		}()
	}
	var err error
	for open := len(ins); open > 0; {
		select {
		case line := <-lines:
			if werr := s.line(line, raw); werr != nil && err == nil {
				err = werr
			}
		case rerr := <-errs:
			open--
			err = errors.Join(err, rerr)
		}
	}
	return err
}

func (s *summary) line(line []byte, raw io.Writer) error {
	if _, err := raw.Write(append(line, '\n')); err != nil {
		return err
	}
	var e event
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
		// Not an event: the go command's own messages.
		fmt.Fprintf(s.out, "%s\n", line)
		return nil
	}
	s.handle(e)
	return nil
}

func (s *summary) handle(e event) {
	if s.first.IsZero() && !e.Time.IsZero() {
		s.first = e.Time
	}
	switch {
	case e.ImportPath != "":
		s.build(e)
	case e.Test == "":
		s.pkg(e)
	default:
		s.test(e)
	}
}

func (s *summary) build(e event) {
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.out, e.Output)
	case "build-fail":
		s.builds = append(s.builds, e.ImportPath)
	}
}

func (s *summary) pkg(e event) {
	p := s.packages[e.Package]
	if p == nil {
		p = &packageResult{name: e.Package, start: e.Time}
		s.packages[e.Package] = p
	}
	switch e.Action {
	case "output":
		if e.Output != "PASS\n" {
			fmt.Fprint(s.out, e.Output)
		}
		if strings.HasPrefix(e.Output, "ok  \t") || strings.HasPrefix(e.Output, "FAIL\t") {
			p.said = true
		}
		switch {
		case strings.HasPrefix(e.Output, cpuTableHeading):
			p.cpu = []string{e.Output}
		case len(p.cpu) > 0 && strings.HasPrefix(e.Output, "  "):
			p.cpu = append(p.cpu, e.Output)
		}
	case "pass", "fail", "skip":
		p.action, p.elapsed = e.Action, e.Elapsed
		if e.FailedBuild != "" {
			s.builds = append(s.builds, e.FailedBuild)
		}
		if !p.said && e.Action != "skip" {
			word := map[string]string{"pass": "ok  ", "fail": "FAIL"}[e.Action]
			fmt.Fprintf(s.out, "%s\t%s\t%.3fs\n", word, e.Package, e.Elapsed)
		}
	}
}

func (s *summary) test(e event) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		s.output[k] = append(s.output[k], e.Output)
	case "pass", "fail", "skip":
		lines := s.output[k]
		delete(s.output, k)
		r := testResult{testKey: k, action: e.Action, elapsed: e.Elapsed, queued: queuedIn(lines)}
		switch e.Action {
		case "fail":
			fmt.Fprint(s.out, strings.Join(lines, ""))
		case "skip":
			r.reason = skipReason(lines)
		}
		s.tests = append(s.tests, r)
		if p := s.packages[e.Package]; p != nil {
			p.tests++
		}
	}
}

// skipReason is what a skipped test logged, without the framework's lines.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- SKIP") {
			continue
		}
		parts = append(parts, l)
	}
	reason := strings.Join(parts, " ")
	if len(reason) > 240 {
		reason = reason[:240] + "…"
	}
	return reason
}

func (s *summary) counts() (passed, failed, skipped int) {
	for _, r := range s.tests {
		switch r.action {
		case "pass":
			passed++
		case "fail":
			failed++
		case "skip":
			skipped++
		}
	}
	return passed, failed, skipped
}

// cpuTableHeading starts the table test/e2e prints of the CPU its tests
// used (cpumeter_test.go); the report repeats it.
const cpuTableHeading = "CPU by test "

// report is where the time went, ending with the closing line.
func (s *summary) report(slowest int) string {
	var b strings.Builder
	var pkgs []*packageResult
	for _, p := range s.packages {
		if p.tests > 0 || p.action == "fail" {
			pkgs = append(pkgs, p)
		}
	}
	sort.Slice(pkgs, func(i, j int) bool {
		if pkgs[i].elapsed != pkgs[j].elapsed {
			return pkgs[i].elapsed > pkgs[j].elapsed
		}
		return pkgs[i].name < pkgs[j].name
	})
	fmt.Fprintf(&b, "\n== time by package (wall time, slowest first; start is after the first event)\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "%9.1fs  start +%-8s %-4s %4d tests  %s\n", p.elapsed, s.offset(p.start), p.action, p.tests, p.name)
	}
	s.writeSlowest(&b, slowest)
	for _, p := range pkgs {
		if len(p.cpu) > 0 {
			fmt.Fprintf(&b, "\n== %s: %s", p.name, strings.Join(p.cpu, ""))
		}
	}
	s.writeSkipsAndFailures(&b, pkgs)
	passed, failed, skipped := s.counts()
	fmt.Fprintf(&b, "\n%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return b.String()
}

// writeSlowest lists the slowest top-level tests by the time they ran, each
// with its slow steps.
func (s *summary) writeSlowest(b *strings.Builder, slowest int) {
	var top []testResult
	for _, r := range s.tests {
		if !strings.Contains(r.test, "/") && r.action != "skip" {
			top = append(top, r)
		}
	}
	ran := func(r testResult) float64 { return r.elapsed - r.queued }
	sort.SliceStable(top, func(i, j int) bool { return ran(top[i]) > ran(top[j]) })
	if len(top) > slowest {
		top = top[:slowest]
	}
	fmt.Fprintf(b, "\n== the %d slowest tests (time it ran, not counting time queued behind other tests)\n", len(top))
	for _, r := range top {
		queued := ""
		if r.queued > 0 {
			queued = fmt.Sprintf("  (queued %.1fs before)", r.queued)
		}
		fmt.Fprintf(b, "%9.1fs  %-4s %s %s%s\n", ran(r), r.action, r.pkg, r.test, queued)
		for _, sub := range s.steps(r.testKey) {
			fmt.Fprintf(b, "%9.1fs       └ %s\n", sub.elapsed, strings.TrimPrefix(sub.test, r.test+"/"))
		}
	}
}

// writeSkipsAndFailures lists the skipped tests with their reasons, then
// everything that failed: tests, builds, packages outside any test.
func (s *summary) writeSkipsAndFailures(b *strings.Builder, pkgs []*packageResult) {
	var skips, fails []string
	for _, r := range s.tests {
		switch r.action {
		case "skip":
			skips = append(skips, fmt.Sprintf("  %s %s: %s", r.pkg, r.test, r.reason))
		case "fail":
			fails = append(fails, fmt.Sprintf("  %s %s (%.1fs)", r.pkg, r.test, r.elapsed))
		}
	}
	if len(skips) > 0 {
		fmt.Fprintf(b, "\n== skipped, with their reasons\n%s\n", strings.Join(skips, "\n"))
	}
	for _, name := range s.builds {
		fails = append(fails, "  "+name+" did not build")
	}
	for _, p := range pkgs {
		if p.action == "fail" && p.tests == 0 {
			fails = append(fails, "  "+p.name+" failed outside any test")
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(b, "\n== failed\n%s\n", strings.Join(fails, "\n"))
	}
}

// stepFloor is the least time a subtest takes to be listed under its test
// among the slowest: where a long test's time goes.
const stepFloor = 20.0

// steps are a test's direct subtests that took stepFloor or more, in the
// order they ended.
func (s *summary) steps(k testKey) []testResult {
	var out []testResult
	prefix := k.test + "/"
	for _, r := range s.tests {
		if r.pkg == k.pkg && strings.HasPrefix(r.test, prefix) && !strings.Contains(r.test[len(prefix):], "/") && r.elapsed >= stepFloor {
			out = append(out, r)
		}
	}
	return out
}

func (s *summary) offset(t time.Time) string {
	if t.IsZero() || s.first.IsZero() {
		return "?"
	}
	d := t.Sub(s.first).Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// verdict is the run's outcome: an error when anything failed or nothing ran.
func (s *summary) verdict() error {
	passed, failed, skipped := s.counts()
	var failedPackages int
	for _, p := range s.packages {
		if p.action == "fail" {
			failedPackages++
		}
	}
	switch {
	case failed > 0 || failedPackages > 0 || len(s.builds) > 0:
		return fmt.Errorf("%d tests failed, %d packages failed, %d did not build", failed, failedPackages, len(s.builds))
	case passed+skipped == 0:
		return errors.New("no test ran")
	}
	return nil
}
