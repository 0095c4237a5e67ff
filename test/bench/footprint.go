package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// cpuWindow is how long CPU is measured at the end of a phase under load
// (density, hibernated_300, nodes_1000). Idle control planes are measured
// over options.idleWindow instead: a process runtime probes a ready
// component every 10 s, so a 10 s window would hold zero or one probe.
const cpuWindow = 10 * time.Second

// footprint is what one control plane's processes use: memory at the start
// of the CPU window, CPU over it.
type footprint struct {
	rssMiB, anonMiB, pssMiB, cpuMillicores float64
	byComponent                            map[string]componentUsage
	// window is how long CPU was measured.
	window time.Duration
}

type componentUsage struct {
	rssMiB, anonMiB, cpuMillicores float64
}

// memorySummary is rss_mib_per_control_plane (and the peer's rss_mib).
type memorySummary struct {
	// P50 is the summed VmRSS of a control plane's processes.
	P50     float64   `json:"p50"`
	Samples []float64 `json:"samples"`
	// AnonP50 counts only anonymous memory (heaps, stacks), not the
	// binary's pages, which every process of the same binary shares.
	AnonP50 float64 `json:"rss_anon_p50"`
	// PSSP50 splits shared pages among their users: the best single figure
	// of what one more control plane costs.
	PSSP50         float64            `json:"pss_p50"`
	ByComponentP50 map[string]float64 `json:"by_component_p50"`
	// ByComponentAnonP50 is each component's anonymous memory.
	ByComponentAnonP50 map[string]float64 `json:"by_component_anon_p50"`
	Clusters           int                `json:"clusters"`
	MeasuredAfterS     float64            `json:"measured_after_s"`
}

// cpuSummary is idle_cpu_millicores_per_control_plane.
type cpuSummary struct {
	P50            float64            `json:"p50"`
	Samples        []float64          `json:"samples"`
	ByComponentP50 map[string]float64 `json:"by_component_p50"`
	WindowS        float64            `json:"window_s"`
}

type rssResult struct {
	status
	memorySummary
	// SingleProcess is the same measurement, in the same window, of
	// clusters whose API server, controller manager and scheduler run as
	// one process (--single-process-control-plane).
	SingleProcess *memorySummary `json:"single_process,omitempty"`
}

type cpuResult struct {
	status
	cpuSummary
	SingleProcess *cpuSummary `json:"single_process,omitempty"`
}

// runFootprint creates a few clusters of each layout (separate processes,
// the default; and single-process), lets them idle for the settle time after
// the last is Available, and measures all of them in one window.
func runFootprint(ctx context.Context, opts *options, p *plane) (*rssResult, *cpuResult) {
	rss, cpu := &rssResult{}, &cpuResult{}
	n := opts.scaled(3, 2)
	var dirs []string
	for _, layout := range []struct {
		prefix string
		single bool
	}{{"r", false}, {"s", true}} {
		for i := 1; i <= n; i++ {
			hc := hostedCluster(fmt.Sprintf("%s%d", layout.prefix, i))
			if layout.single {
				hc.Annotations = map[string]string{hypershiftv1alpha1.SingleProcessControlPlaneAnnotation: "true"}
			}
			if err := p.createCluster(ctx, hc); err != nil {
				return failBoth(rss, cpu, err)
			}
			if err := p.waitAvailable(ctx, hc.Name, 3*time.Minute, nil); err != nil {
				return failBoth(rss, cpu, err)
			}
			dirs = append(dirs, p.clusterDir(hc.Name))
		}
	}
	fmt.Printf("   %d + %d clusters Available; idling %s before measuring\n", n, n, opts.settle())
	if err := sleep(ctx, opts.settle()); err != nil {
		return failBoth(rss, cpu, err)
	}
	fps, err := measureFootprints(ctx, dirs, opts.idleWindow())
	if err != nil {
		return failBoth(rss, cpu, err)
	}
	rss.memorySummary, cpu.cpuSummary = summarize(fps[:n], opts.settle())
	singleRSS, singleCPU := summarize(fps[n:], opts.settle())
	rss.SingleProcess, cpu.SingleProcess = &singleRSS, &singleCPU
	fmt.Printf("   RSS per control plane p50 %.0f MiB (anon %.0f, PSS %.0f) %s\n", rss.P50, rss.AnonP50, rss.PSSP50, formatComponents(rss.ByComponentP50, "%.0f"))
	fmt.Printf("   single process: RSS p50 %.0f MiB (anon %.0f, PSS %.0f) %s\n", singleRSS.P50, singleRSS.AnonP50, singleRSS.PSSP50, formatComponents(singleRSS.ByComponentP50, "%.0f"))
	fmt.Printf("   idle CPU per control plane p50 %.1f millicores %s; single process %.1f\n", cpu.P50, formatComponents(cpu.ByComponentP50, "%.1f"), singleCPU.P50)
	return rss, cpu
}

func failBoth(rss *rssResult, cpu *cpuResult, err error) (*rssResult, *cpuResult) {
	rss.Error, cpu.Error = err.Error(), err.Error()
	return rss, cpu
}

// measureFootprints measures the processes of each pattern at once: memory
// now, CPU over the next window.
func measureFootprints(ctx context.Context, patterns []string, window time.Duration) ([]footprint, error) {
	groups := make([][]proc, len(patterns))
	for i, pattern := range patterns {
		groups[i] = findProcs(pattern)
		if len(groups[i]) == 0 {
			return nil, fmt.Errorf("no process has %s on its command line", pattern)
		}
	}
	return measureGroups(ctx, groups, window)
}

// measureGroups measures groups of processes at once: memory now, CPU over
// the next window. A process that exits meanwhile counts no CPU.
func measureGroups(ctx context.Context, groups [][]proc, window time.Duration) ([]footprint, error) {
	type sample struct {
		proc
		ticks uint64
		mem   memory
	}
	before := make([][]sample, len(groups))
	for i, procs := range groups {
		for _, p := range procs {
			ticks, ok1 := cpuTicks(p.pid)
			mem, ok2 := readMemory(p.pid, true)
			if ok1 && ok2 {
				before[i] = append(before[i], sample{proc: p, ticks: ticks, mem: mem})
			}
		}
		if len(before[i]) == 0 {
			return nil, fmt.Errorf("process group %d: none of its %d processes is running", i, len(procs))
		}
	}
	start := time.Now()
	if err := sleep(ctx, window); err != nil {
		return nil, err
	}
	elapsed := time.Since(start).Seconds()
	out := make([]footprint, len(groups))
	for i, samples := range before {
		fp := footprint{byComponent: map[string]componentUsage{}, window: window}
		for _, s := range samples {
			u := fp.byComponent[s.component]
			u.rssMiB += s.mem.rss / 1024
			u.anonMiB += s.mem.anon / 1024
			fp.rssMiB += s.mem.rss / 1024
			fp.anonMiB += s.mem.anon / 1024
			fp.pssMiB += s.mem.pss / 1024
			if ticks, ok := cpuTicks(s.pid); ok && ticks >= s.ticks {
				m := float64(ticks-s.ticks) / clockTicks / elapsed * 1000
				u.cpuMillicores += m
				fp.cpuMillicores += m
			}
			fp.byComponent[s.component] = u
		}
		out[i] = fp
	}
	return out, nil
}

func summarize(fps []footprint, after time.Duration) (memorySummary, cpuSummary) {
	var rss, anon, pss, cpu []float64
	compRSS, compAnon, compCPU := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for _, fp := range fps {
		rss = append(rss, fp.rssMiB)
		anon = append(anon, fp.anonMiB)
		pss = append(pss, fp.pssMiB)
		cpu = append(cpu, fp.cpuMillicores)
		for name, u := range fp.byComponent {
			compRSS[name] = append(compRSS[name], u.rssMiB)
			compAnon[name] = append(compAnon[name], u.anonMiB)
			compCPU[name] = append(compCPU[name], u.cpuMillicores)
		}
	}
	mem := memorySummary{
		P50:                round1(median(rss)),
		Samples:            roundAll(rss),
		AnonP50:            round1(median(anon)),
		PSSP50:             round1(median(pss)),
		ByComponentP50:     medians(compRSS),
		ByComponentAnonP50: medians(compAnon),
		Clusters:           len(fps),
		MeasuredAfterS:     after.Seconds(),
	}
	cpuSum := cpuSummary{
		P50:            round1(median(cpu)),
		Samples:        roundAll(cpu),
		ByComponentP50: medians(compCPU),
		WindowS:        fps[0].window.Seconds(),
	}
	return mem, cpuSum
}

func medians(byName map[string][]float64) map[string]float64 {
	out := map[string]float64{}
	for name, xs := range byName {
		out[name] = round1(median(xs))
	}
	return out
}

// formatComponents prints "(a 1, b 2)" with the largest first.
func formatComponents(byName map[string]float64, format string) string {
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return byName[names[i]] > byName[names[j]] })
	s := "("
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n + " " + fmt.Sprintf(format, byName[n])
	}
	return s + ")"
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
