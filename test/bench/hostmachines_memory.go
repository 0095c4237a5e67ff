package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/nodes/join"
	nodemachine "hypershift.dev/internal/nodes/machine"
)

// sampleMemory sums, per machine, the memory of the processes in its
// network namespace, and of those with its pods' processes.
func (r *hostMachinesRun) sampleMemory(res *hostMachinesResult, after time.Duration) {
	byNode := map[string]int{}
	for i, s := range res.PerMachine {
		byNode[s.Node] = i
	}
	var rss, anon, pss, podsRSS, podsAnon, podsPSS []float64
	byComponent := map[string][]float64{}
	for _, rec := range r.machines() {
		if rec.NetnsInode == 0 {
			continue
		}
		pids := nodemachine.Processes(rec.NetnsInode)
		inNetns := map[int]bool{}
		var sum, withPods memory
		components := map[string]float64{}
		for _, pid := range pids {
			inNetns[pid] = true
			if m, ok := readMemory(pid, true); ok {
				sum.rss += m.rss
				sum.anon += m.anon
				sum.pss += m.pss
				components[componentOfPid(pid)] += m.rss / 1024
			}
		}
		withPods = sum
		for _, pid := range podProcesses(filepath.Join(r.dir, rec.Name, "root", "var-lib", "hypershift-node")) {
			if inNetns[pid] {
				continue
			}
			if m, ok := readMemory(pid, true); ok {
				withPods.rss += m.rss
				withPods.anon += m.anon
				withPods.pss += m.pss
			}
		}
		rss = append(rss, sum.rss/1024)
		anon = append(anon, sum.anon/1024)
		pss = append(pss, sum.pss/1024)
		podsPSS = append(podsPSS, withPods.pss/1024)
		podsRSS = append(podsRSS, withPods.rss/1024)
		podsAnon = append(podsAnon, withPods.anon/1024)
		for c, v := range components {
			byComponent[c] = append(byComponent[c], v)
		}
		if i, ok := byNode[rec.Name]; ok {
			s := &res.PerMachine[i]
			s.Processes = len(pids)
			s.RSSMiB, s.AnonMiB = round1(sum.rss/1024), round1(sum.anon/1024)
			s.WithPodsRSSMiB, s.WithPodsAnonMiB = round1(withPods.rss/1024), round1(withPods.anon/1024)
			s.PSSMiB, s.WithPodsPSSMiB = round1(sum.pss/1024), round1(withPods.pss/1024)
		}
	}
	if len(rss) == 0 {
		return
	}
	res.Memory = &machineMemory{
		MeasuredAfterS: after.Seconds(),
		RSS:            summarizeIfAny(rss),
		Anon:           summarizeIfAny(anon),
		PSS:            summarizeIfAny(pss),
		WithPodsRSS:    summarizeIfAny(podsRSS),
		WithPodsAnon:   summarizeIfAny(podsAnon),
		WithPodsPSS:    summarizeIfAny(podsPSS),
		ByComponentP50: medians(byComponent),
	}
}

func componentOfPid(pid int) string {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(raw) == 0 {
		return "?"
	}
	return componentOf(strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00"))
}

// podProcesses lists the processes in the node's own cgroup root, which
// node.json in its node dir records: its pods' containers.
func podProcesses(nodeDir string) []int {
	n, ok, err := join.Load(nodeDir)
	if err != nil || !ok || n.CgroupRoot == "" {
		return nil
	}
	var pids []int
	for _, pr := range listProcs(func(pid int, _ []string) bool {
		cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cgroup"))
		return err == nil && strings.Contains(string(cg), ":"+n.CgroupRoot+"/")
	}) {
		pids = append(pids, pr.pid)
	}
	return pids
}

// clusterAPIManagerMemory is the memory of the plane's Cluster API manager
// (its command line names the plane's data dir), nil when none runs.
func clusterAPIManagerMemory(dataDir string) *memoryMiB {
	for _, pr := range findProcs(dataDir + "/") {
		if filepath.Base(strings.Fields(pr.cmdline)[0]) != clusterapi.BinaryName {
			continue
		}
		if m, ok := readMemory(pr.pid, false); ok {
			return &memoryMiB{RSS: round1(m.rss / 1024), Anon: round1(m.anon / 1024)}
		}
	}
	return nil
}
