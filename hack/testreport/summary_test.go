package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A real `go test -json` run of a package with a passing test, a failing
// subtest, a skipped test and a slow one: the report counts every test and
// subtest, prints the failing test's output, names the skip's reason, and
// the run fails.
func TestReportOfARealRun(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go on PATH: %v", err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.test/sample\n\ngo 1.26\n")
	write(t, filepath.Join(dir, "sample_test.go"), `package sample

import (
	"testing"
	"time"
)

func TestPasses(t *testing.T) {}

func TestSlow(t *testing.T) { time.Sleep(300 * time.Millisecond) }

// Queued the most, ran the least: listed after TestSlow.
func TestQueued(t *testing.T) { t.Log("lanes: queued 0.1s"); time.Sleep(150 * time.Millisecond) }

func TestHasSubtests(t *testing.T) {
	t.Run("good", func(t *testing.T) {})
	t.Run("bad", func(t *testing.T) { t.Log("the evidence"); t.Error("broken on purpose") })
}

func TestSkips(t *testing.T) { t.Skip("needs a thing this host lacks") }
`)
	cmd := exec.Command(goBin, "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	stream, _ := cmd.CombinedOutput() // the run fails on purpose

	var out bytes.Buffer
	jsonPath := filepath.Join(dir, "artifacts", "test.json")
	reportPath := filepath.Join(dir, "artifacts", "report.txt")
	err = run([]io.Reader{bytes.NewReader(stream)}, &out, jsonPath, reportPath, 2)
	if err == nil || !strings.Contains(err.Error(), "1 packages failed") {
		t.Errorf("run returned %v, want the failed package named", err)
	}
	got := out.String()
	for _, want := range []string{
		"the evidence",      // the failing subtest's output
		"broken on purpose", // and its error
		"needs a thing this host lacks",
		"TestSlow",
		"example.test/sample TestHasSubtests/bad (", // in the list of failures
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "=== RUN   TestPasses") || strings.Contains(got, "=== RUN   TestSlow") {
		t.Errorf("output shows the framework's RUN lines of passing tests:\n%s", got)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if last := lines[len(lines)-1]; last != "4 passed, 2 failed, 1 skipped" {
		t.Errorf("closing line %q, want 4 passed (TestPasses, TestSlow, TestQueued, good), 2 failed (bad and its parent), 1 skipped", last)
	}
	// The slowest list is cut at 2 and starts with the slow test: the
	// queued one ran for less time, and says how long it queued.
	slow := strings.Split(got[strings.Index(got, "== the 2 slowest tests"):], "\n")
	if !strings.Contains(slow[1], "TestSlow") || !strings.Contains(slow[2], "TestQueued") || !strings.Contains(slow[2], "(queued 0.1s before)") {
		t.Errorf("slowest tests listed:\n%s\n%s\nwant TestSlow, then TestQueued (queued 0.1s before)", slow[1], slow[2])
	}
	if raw, err := os.ReadFile(jsonPath); err != nil || !bytes.Equal(raw, stream) {
		t.Errorf("the raw stream was not kept as it came (err %v)", err)
	}
	if report, err := os.ReadFile(reportPath); err != nil || !strings.HasSuffix(string(report), "4 passed, 2 failed, 1 skipped\n") {
		t.Errorf("report file: %v\n%s", err, report)
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct {
		name, stream, want string
	}{
		{"passes", `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}` + "\n", ""},
		{"nothing ran", `{"Action":"skip","Package":"p","Elapsed":0}` + "\n", "no test ran"},
		{"build failure", `{"ImportPath":"p [p.test]","Action":"build-output","Output":"p/x.go:1: syntax error\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"fail","Package":"p","Elapsed":0,"FailedBuild":"p [p.test]"}
`, "did not build"},
		{"not json is printed, not fatal", "go: downloading x v1\n" + `{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}` + "\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run([]io.Reader{strings.NewReader(tc.stream)}, &out, "", "", 25)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("failed: %v\n%s", err, out.String())
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("returned %v, want %q\n%s", err, tc.want, out.String())
			}
		})
	}
}

// TestStreamsSideBySide: two streams (make test's end-to-end run and the
// others') are read together, each line whole, and the verdict covers
// both: a failure in either fails the run, and the raw stream has every
// line of both.
func TestStreamsSideBySide(t *testing.T) {
	long := strings.Repeat("x", 100*1024) // a line longer than a pipe's atomic write
	e2e := `{"Action":"output","Package":"e","Test":"TestE","Output":"` + long + `\n"}
{"Action":"pass","Package":"e","Test":"TestE","Elapsed":1}
{"Action":"pass","Package":"e","Elapsed":1}
`
	others := `{"Action":"pass","Package":"o","Test":"TestO","Elapsed":0.1}
{"Action":"fail","Package":"o","Test":"TestBroken","Elapsed":0.1}
{"Action":"fail","Package":"o","Elapsed":0.2}
`
	var out, raw bytes.Buffer
	s := newSummary(&out)
	if err := s.read(&raw, strings.NewReader(e2e), strings.NewReader(others)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(raw.String(), "\n"); n != 6 {
		t.Errorf("raw stream has %d lines, want 6", n)
	}
	for _, line := range strings.Split(strings.TrimSuffix(raw.String(), "\n"), "\n") {
		if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") {
			t.Errorf("a line of the raw stream is not whole: %.80s…", line)
		}
	}
	if err := s.verdict(); err == nil {
		t.Errorf("no failure reported for TestBroken of the second stream")
	}
	if got := s.report(5); !strings.Contains(got, "2 passed, 1 failed") {
		t.Errorf("report does not count both streams:\n%s", got)
	}
	// test2json run on a binary writes no "ok" line of go test's: the
	// report says each package's result as it comes all the same.
	for _, want := range []string{"ok  \te\t1.000s\n", "FAIL\to\t0.200s\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the live output lacks %q:\n%.300s", want, out.String())
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStepsOfASlowTest: under a slow test the report lists its direct
// subtests that took stepFloor or more, and neither the quick ones nor the
// subtests of subtests.
func TestStepsOfASlowTest(t *testing.T) {
	s := newSummary(io.Discard)
	for _, e := range []event{
		{Action: "pass", Package: "p", Test: "TestLong/the slow step", Elapsed: stepFloor + 5},
		{Action: "pass", Package: "p", Test: "TestLong/the slow step/nested", Elapsed: stepFloor + 4},
		{Action: "pass", Package: "p", Test: "TestLong/a quick step", Elapsed: stepFloor - 1},
		{Action: "pass", Package: "p", Test: "TestLong", Elapsed: 2*stepFloor + 10},
		{Action: "pass", Package: "p", Test: "TestLongish/its own slow step", Elapsed: stepFloor + 1},
		{Action: "pass", Package: "p", Test: "TestLongish", Elapsed: stepFloor + 2},
	} {
		s.handle(e)
	}
	got := s.report(1)
	if !strings.Contains(got, "└ the slow step\n") {
		t.Errorf("the slow step is not listed:\n%s", got)
	}
	for _, not := range []string{"nested", "a quick step", "its own slow step"} {
		if strings.Contains(got, not) {
			t.Errorf("report lists %q:\n%s", not, got)
		}
	}
}

// TestCPUTableRepeated: a package's "CPU by test" table, printed at its
// end, is repeated in the report under the package's name, without the
// lines before and after it.
func TestCPUTableRepeated(t *testing.T) {
	s := newSummary(io.Discard)
	for _, out := range []string{
		"processes the tests ran: kubectl 3 runs, 1 CPU-s\n",
		cpuTableHeading + "(sampled):\n",
		"      120 CPU-s  TestHeavy\n",
		"       10 CPU-s  in all 1 tests\n",
		"ok  \tp\t1.0s\n",
	} {
		s.handle(event{Action: "output", Package: "p", Output: out})
	}
	s.handle(event{Action: "pass", Package: "p", Test: "TestHeavy", Elapsed: 1})
	s.handle(event{Action: "pass", Package: "p", Elapsed: 2})
	got := s.report(5)
	want := "\n== p: " + cpuTableHeading + "(sampled):\n      120 CPU-s  TestHeavy\n       10 CPU-s  in all 1 tests\n\n"
	if !strings.Contains(got, want) {
		t.Errorf("report:\n%s\nwant the table:\n%s", got, want)
	}
	if strings.Contains(got, "processes the tests ran") || strings.Contains(got, "ok  \tp") {
		t.Errorf("the report repeats lines outside the table:\n%s", got)
	}
}
