package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// What a failed rotation check prints of the control plane's own record,
// so that a failure seen once (on a loaded CI machine, say) can be read
// without running it again: every instance's stops, starts and readiness
// changes during the rotation, the warnings etcd logged around the longest
// outage, and the API servers' and the proxy's errors then.

// timelineLines bounds each part of the timeline.
const timelineLines = 40

// timeline is the control plane's record of cluster c from start to end,
// around outage (empty: none).
func timeline(dataDir string, start, end time.Time, outage window) string {
	var b strings.Builder
	fmt.Fprintf(&b, "etcd members and API servers of clusters-c from %s to %s:\n", start.Format("15:04:05"), end.Format("15:04:05"))
	events := instanceEvents(filepath.Join(dataDir, "up.log"), "clusters-c", start.Add(-time.Second), end)
	for _, line := range events[max(0, len(events)-timelineLines):] {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	if outage.first.IsZero() {
		return b.String()
	}
	from, to := outage.first.Add(-5*time.Second), outage.last.Add(time.Second)
	fmt.Fprintf(&b, "logged from %s to %s (the longest outage was %s):\n", from.Format("15:04:05"), to.Format("15:04:05"), outage)
	dir := filepath.Join(dataDir, "clusters", "clusters-c")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		log := filepath.Join(dir, name, name+".log")
		var lines []string
		switch {
		case strings.HasPrefix(name, "etcd-"):
			lines = etcdWarnings(log, from, to)
		case strings.HasPrefix(name, "kube-apiserver"):
			lines = klogErrors(log, from, to)
		default:
			continue
		}
		for _, line := range firstOf(lines, timelineLines/4) {
			fmt.Fprintf(&b, "  %s: %s\n", name, line)
		}
	}
	return b.String()
}

// instanceEvents are the supervisor's lines of a control plane's etcd
// members and API servers in the management plane's log, from from to to:
// their stops, starts and readiness changes.
func instanceEvents(upLog, controlPlane string, from, to time.Time) []string {
	var out []string
	eachLine(upLog, func(line string) {
		var e struct {
			TS           string `json:"ts"`
			Msg          string `json:"msg"`
			ControlPlane string `json:"controlPlane"`
			Component    string `json:"component"`
			Error        string `json:"error"`
			Reason       string `json:"reason"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.ControlPlane != controlPlane || e.Msg == "replaced reloadable files in place" ||
			(!strings.HasPrefix(e.Component, "etcd-") && !strings.HasPrefix(e.Component, "kube-apiserver")) {
			return
		}
		ts, err := time.Parse(time.RFC3339, e.TS)
		if err != nil || ts.Before(from.Truncate(time.Second)) || ts.After(to) {
			return
		}
		detail := strings.TrimSpace(e.Reason + " " + e.Error)
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", ts.Local().Format("15:04:05"), e.Component, e.Msg, detail)))
	})
	return out
}

// etcdWarnings counts, by message, what an etcd member logged (it logs
// warnings and worse) from from to to.
func etcdWarnings(log string, from, to time.Time) []string {
	count := map[string]int{}
	eachLine(log, func(line string) {
		var e struct {
			TS  time.Time `json:"ts"`
			Msg string    `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &e) != nil || e.TS.Before(from) || e.TS.After(to) {
			return
		}
		count[e.Msg]++
	})
	var out []string
	for _, msg := range slices.Sorted(maps.Keys(count)) {
		out = append(out, fmt.Sprintf("%d× %s", count[msg], msg))
	}
	return out
}

// klogErrors are a klog file's error lines from from to to (klog stamps a
// line with the time of day only: the test runs within a day).
func klogErrors(log string, from, to time.Time) []string {
	lo, hi := from.Format("15:04:05"), to.Format("15:04:05")
	var out []string
	eachLine(log, func(line string) {
		// E1130 22:05:43.787123   pid file:line] message
		if len(line) < 14 || line[0] != 'E' {
			return
		}
		if clock := line[6:14]; clock >= lo && clock <= hi {
			out = append(out, line[6:min(len(line), 300)])
		}
	})
	return out
}

// eachLine calls f with every line of the file at path (a test's own log:
// a line longer than 1 MiB ends the reading).
func eachLine(path string, f func(string)) {
	file, err := os.Open(path)
	if err != nil {
		return
	}
	defer file.Close()
	s := bufio.NewScanner(file)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		f(s.Text())
	}
}
