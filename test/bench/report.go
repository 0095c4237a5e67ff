package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// status says why a section has no (or only partial) figures.
type status struct {
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// report is bench/out/latest.json.
type report struct {
	Schema    int     `json:"schema"`
	StartedAt string  `json:"started_at"`
	DurationS float64 `json:"duration_s"`
	Mode      string  `json:"mode"`
	Machine   machine `json:"machine"`
	// UpArgs are the flags --up-args added to every `hypershift up`.
	UpArgs []string `json:"up_args,omitempty"`

	Create   *createResult   `json:"create_to_available_s"`
	Baseline *baselineResult `json:"baseline_start_s"`
	// Ratio is create p50 / baseline p50, both from this run.
	Ratio   *float64       `json:"create_ratio_vs_baseline"`
	RSS     *rssResult     `json:"rss_mib_per_control_plane"`
	IdleCPU *cpuResult     `json:"idle_cpu_millicores_per_control_plane"`
	Density *densityResult `json:"density"`
	Burst   *burstResult   `json:"burst_100"`
	// Sleepers is hibernated_300: 300 clusters hibernated, 60 woken.
	Sleepers *sleepersResult `json:"hibernated_300"`
	Peer     *peerResult     `json:"peer"`
	Recovery *recoveryResult `json:"recovery"`
	// Hibernation is resume and wake latency, and what a sleeping cluster costs.
	Hibernation *hibernationResult `json:"hibernation"`
	Nodes       *nodesResult       `json:"nodes_1000"`
	RealJoin    *realJoinResult    `json:"real_node_join"`
	// HostMachines is host_machines: machines of a Host pool, through
	// Cluster API.
	HostMachines *hostMachinesResult `json:"host_machines"`
	// KubeRuntime is kube_runtime: control planes as pods.
	KubeRuntime *kubeRuntimeResult `json:"kube_runtime"`
	Targets     []target           `json:"targets"`

	quick  bool
	shared *plane // the management plane of create and rss
}

type machine struct {
	NProc           int     `json:"nproc"`
	MemTotalMiB     float64 `json:"mem_total_mib"`
	MemAvailableMiB float64 `json:"mem_available_start_mib"`
	CPUModel        string  `json:"cpu_model"`
	Kernel          string  `json:"kernel"`
	LoadAvg         string  `json:"loadavg_start"`
	LoadAvgEnd      string  `json:"loadavg_end"`
	Hypershift      string  `json:"hypershift"`
	// Others are hypershift processes this run did not start (another
	// management plane on the machine): they share its CPU and memory.
	OtherProcesses int     `json:"other_hypershift_processes"`
	OtherRSSMiB    float64 `json:"other_hypershift_rss_mib"`
}

type target struct {
	Name  string `json:"name"`
	Goal  string `json:"goal"`
	Value string `json:"value"`
	// Met is nil when this run cannot tell (phase skipped, quick mode).
	Met *bool `json:"met"`
}

func newReport(opts *options) *report {
	r := &report{
		Schema:    1,
		StartedAt: time.Now().UTC().Format(time.RFC3339),
		Mode:      "full",
		UpArgs:    opts.upArgs,
		quick:     opts.quick,
	}
	if opts.quick {
		r.Mode = "quick"
	}
	r.Machine = readMachine(opts.bin)
	return r
}

func readMachine(bin string) machine {
	m := machine{
		MemTotalMiB:     round1(meminfo("MemTotal")),
		MemAvailableMiB: round1(memAvailableMiB()),
		Kernel:          strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
	}
	cpuinfo := readFile("/proc/cpuinfo")
	for _, line := range strings.Split(cpuinfo, "\n") {
		if strings.HasPrefix(line, "processor") {
			m.NProc++
		}
		if m.CPUModel == "" && strings.HasPrefix(line, "model name") {
			if _, v, ok := strings.Cut(line, ":"); ok {
				m.CPUModel = strings.TrimSpace(v)
			}
		}
	}
	m.LoadAvg = loadavg()
	if out, err := exec.Command(bin, "version").Output(); err == nil {
		m.Hypershift = strings.Join(strings.Fields(string(out)), " ")
	}
	for _, p := range findProcs("hypershift ") {
		if mem, ok := readMemory(p.pid, false); ok {
			m.OtherProcesses++
			m.OtherRSSMiB += mem.rss / 1024
		}
	}
	m.OtherRSSMiB = round1(m.OtherRSSMiB)
	return m
}

// loadavg is the 1, 5 and 15 minute load average: this machine is shared,
// and other work on it slows everything measured here.
func loadavg() string {
	if f := strings.Fields(readFile("/proc/loadavg")); len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}

func (r *report) skip(phase, why string) { r.setStatus(phase, status{Skipped: why}) }

func (r *report) fail(phase string, err error) { r.setStatus(phase, status{Error: err.Error()}) }

func (r *report) setStatus(phase string, s status) {
	switch phase {
	case "baseline":
		r.Baseline = &baselineResult{status: s}
	case "create":
		r.Create = &createResult{status: s}
	case "rss":
		r.RSS, r.IdleCPU = &rssResult{status: s}, &cpuResult{status: s}
	case "peer":
		r.Peer = &peerResult{status: s}
	case "recovery":
		r.Recovery = &recoveryResult{status: s}
	case "density":
		r.Density = &densityResult{status: s}
	case "burst":
		r.Burst = &burstResult{status: s}
	case "hibernated_300":
		r.Sleepers = &sleepersResult{status: s}
	case "nodes_1000":
		r.Nodes = &nodesResult{status: s}
	case "real_node_join":
		r.RealJoin = &realJoinResult{status: s}
	case "host_machines":
		r.HostMachines = &hostMachinesResult{status: s}
	case "kube_runtime":
		r.KubeRuntime = &kubeRuntimeResult{status: s}
	}
}

// finish computes the ratio and judges the targets.
func (r *report) finish(d time.Duration) {
	r.DurationS = round1(d.Seconds())
	r.Machine.LoadAvgEnd = loadavg()
	createP50 := r.setRatio()
	r.setMachineRatio()
	judge := r.judge
	if createP50 > 0 {
		judge("create p50", "≤ 3 s", fmt.Sprintf("%.2f s", createP50), createP50 <= 3, true)
	}
	if r.Ratio != nil {
		judge("create vs baseline", "≤ 1.5×", fmt.Sprintf("%.2f×", *r.Ratio), *r.Ratio <= 1.5, true)
	}
	if r.RSS != nil && r.RSS.P50 > 0 {
		judge("RSS per idle control plane", "≤ 256 MiB", fmt.Sprintf("%.0f MiB", r.RSS.P50), r.RSS.P50 <= 256, true)
		if sp := r.RSS.SingleProcess; sp != nil && sp.P50 > 0 {
			judge("RSS, single-process plane", "≤ 256 MiB", fmt.Sprintf("%.0f MiB", sp.P50), sp.P50 <= 256, true)
		}
	}
	r.judgeScale()
	if n := r.Nodes; n != nil && n.Skipped == "" {
		value, ok := n.target()
		judge("1,000 simulated nodes", "1,000 Ready, agent < 1 core", value, ok, !r.quick && n.Error == "")
	}
}

// judge records a target; known false: this run cannot tell.
func (r *report) judge(name, goal, value string, ok bool, known bool) {
	t := target{Name: name, Goal: goal, Value: value}
	if known {
		t.Met = &ok
	}
	r.Targets = append(r.Targets, t)
}

// judgeScale judges the density, burst and hibernated_300 targets.
func (r *report) judgeScale() {
	judge := r.judge
	if d := r.Density; d != nil && d.Skipped == "" {
		judge("density", "60 control planes on 2 cores / 24 GiB", fmt.Sprintf("%d (%s)", d.Reached, d.StopReason),
			d.Reached >= 60, !r.quick && d.Error == "")
	}
	if b := r.Burst; b != nil && b.Skipped == "" {
		value := fmt.Sprintf("%d/%d Available (%s)", b.Available, b.Clusters, b.StopReason)
		if b.AllAvailableS > 0 {
			value = fmt.Sprintf("%.1f s for %d", b.AllAvailableS, b.Clusters)
		}
		judge("burst of 100", "< 180 s", value, b.AllAvailableS > 0 && b.AllAvailableS < 180, !r.quick && b.Error == "")
		judge("management API during burst", "p99 < 1 s", b.Management.String(), b.Management.ok(), !r.quick && b.Error == "")
	}
	if s := r.Sleepers; s != nil && s.Skipped == "" {
		value := fmt.Sprintf("%d hibernated, %d of %d woken Available", s.Hibernated, s.AwakeAvailable, s.Awake)
		if s.WakeAllS > 0 {
			value += fmt.Sprintf(" in %.0f s", s.WakeAllS)
		}
		judge("300 hibernated, 60 awake", "all Available", value, s.Hibernated >= 300 && s.AwakeAvailable >= 60, !r.quick && s.Error == "")
	}
}

// target is nodes_1000's figure against its goal: 1,000 Ready nodes with
// the agent under one core.
func (n *nodesResult) target() (string, bool) {
	if n.ReadyS == 0 {
		return fmt.Sprintf("%d of %d Ready", n.Ready, n.Nodes), false
	}
	value := fmt.Sprintf("%d Ready in %.0f s, agent %.3f cores", n.Nodes, n.ReadyS, n.AgentCPUCores)
	return value, n.Nodes >= 1000 && n.WindowS > 0 && n.AgentCPUCores < 1
}

// setRatio sets create p50 / baseline p50 when both were measured, and
// returns the create p50 (0 when not measured).
func (r *report) setRatio() float64 {
	var createP50, baseP50 float64
	if r.Create != nil {
		createP50 = r.Create.P50
	}
	if r.Baseline != nil {
		baseP50 = r.Baseline.P50
	}
	if createP50 > 0 && baseP50 > 0 {
		ratio := round3(createP50 / baseP50)
		r.Ratio = &ratio
	}
	return createP50
}

// setMachineRatio compares host_machines' machine joins with the same
// run's real_node_join p50, when both measured.
func (r *report) setMachineRatio() {
	h, j := r.HostMachines, r.RealJoin
	if h == nil || j == nil || j.ReadyS == nil || j.ReadyS.P50 <= 0 {
		return
	}
	ratio := &machineRatio{RealJoinReadyP50: j.ReadyS.P50}
	if h.ReadyS != nil {
		ratio.CreateP50 = round3(h.ReadyS.P50 / j.ReadyS.P50)
	}
	if h.ScaleUpMachineS > 0 {
		ratio.ScaleUp = round3(h.ScaleUpMachineS / j.ReadyS.P50)
	}
	if ratio.CreateP50 > 0 || ratio.ScaleUp > 0 {
		h.RatioVsRealJoin = ratio
	}
}

func (r *report) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
