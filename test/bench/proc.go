package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hypershift.dev/internal/runtime/process"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat; it
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// proc is a process found in /proc.
type proc struct {
	pid       int
	cmdline   string
	component string
}

// findProcs lists the processes whose command line contains one of the
// patterns (a space is appended to the command line, so "DIR " matches DIR
// as the last argument).
func findProcs(patterns ...string) []proc {
	return listProcs(func(_ int, args []string) bool {
		return containsAny(strings.Join(args, " ")+" ", patterns)
	})
}

// listProcs lists the processes but this one, with a command line (no
// kernel threads), that match accepts.
func listProcs(match func(pid int, args []string) bool) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if !match(pid, args) {
			continue
		}
		out = append(out, proc{pid: pid, cmdline: strings.Join(args, " "), component: componentOf(args)})
	}
	return out
}

func containsAny(s string, patterns []string) bool {
	for _, p := range patterns {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// componentOf names a process: the component of `hypershift component
// NAME`, else the subcommand or program.
func componentOf(args []string) string {
	if len(args) >= 3 && args[1] == "component" {
		return args[2]
	}
	if len(args) >= 2 && filepath.Base(args[0]) == "hypershift" {
		return "hypershift " + args[1]
	}
	return filepath.Base(args[0])
}

// memory of one process, in KiB.
type memory struct {
	rss, anon, pss float64
}

// readMemory reads VmRSS and RssAnon from /proc/PID/status, and with pss
// the proportional set size from smaps_rollup (costlier: the kernel walks
// the page tables), which shares the binary's pages among its users.
func readMemory(pid int, pss bool) (memory, bool) {
	var m memory
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, false
	}
	m.rss = kibField(status, "VmRSS:")
	m.anon = kibField(status, "RssAnon:")
	if pss {
		if rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
			m.pss = kibField(rollup, "Pss:")
		}
	}
	return m, true
}

func kibField(data []byte, name string) float64 {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name) {
			fields := strings.Fields(line[len(name):])
			if len(fields) > 0 {
				v, _ := strconv.ParseFloat(fields[0], 64)
				return v
			}
		}
	}
	return 0
}

// cpuTicks is utime+stime of a process.
func cpuTicks(pid int) (uint64, bool) {
	fields, err := process.StatFields(pid)
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if err != nil || len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return utime + stime, true
}

// meminfo reads one field of /proc/meminfo in MiB.
func meminfo(name string) float64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return kibField(data, name+":") / 1024
}

func memAvailableMiB() float64 { return meminfo("MemAvailable") }

// summedRSSMiB adds up the RSS of every process matching a pattern.
func summedRSSMiB(patterns ...string) float64 {
	return summedMiB(false, func(m memory) float64 { return m.rss }, patterns)
}

// summedPSSMiB adds up the proportional set size of every process
// matching a pattern.
func summedPSSMiB(patterns ...string) float64 {
	return summedMiB(true, func(m memory) float64 { return m.pss }, patterns)
}

func summedMiB(pss bool, field func(memory) float64, patterns []string) float64 {
	total := 0.0
	for _, p := range findProcs(patterns...) {
		if m, ok := readMemory(p.pid, pss); ok {
			total += field(m)
		}
	}
	return total / 1024
}

// killUnder SIGKILLs, by pid, the processes that have dir (a data dir of
// this run) or a path under it on their command line, and returns how many
// it signalled.
func killUnder(dir string) int {
	procs := findProcs(dir+"/", dir+" ")
	for _, p := range procs {
		_ = syscall.Kill(p.pid, syscall.SIGKILL) // it may have exited meanwhile
	}
	if len(procs) > 0 {
		time.Sleep(500 * time.Millisecond) // let the kernel reap and free
	}
	return len(procs)
}
