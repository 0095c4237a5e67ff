package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// printTable prints the figures for people; errors in full below it.
func (r *report) printTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "hypershift bench (%s) on %d CPUs (%s), %.1f GiB memory, %s\n", r.Mode, m.NProc, m.CPUModel, m.MemTotalMiB/1024, m.Hypershift)
	fmt.Fprintf(w, "load average at start %s, at end %s; other hypershift processes on the machine: %d (%.0f MiB RSS)\n\n",
		m.LoadAvg, m.LoadAvgEnd, m.OtherProcesses, m.OtherRSSMiB)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tVALUE\tNOTES")
	row := func(name string, s status, value, notes string) {
		switch {
		case s.Skipped != "":
			value, notes = "skipped", s.Skipped
		case s.Error != "":
			value += " (ERROR, see below)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, notes)
	}
	if b := r.Baseline; b != nil {
		row("baseline etcd+apiserver start p50", b.status, fmt.Sprintf("%.2f s", b.P50),
			fmt.Sprintf("n=%d; etcd /health %.2f s, apiserver serving %.2f s (p50); %.2f CPU-s to ready", b.N, b.EtcdReadyP50, b.ServingP50, b.CPUSecondsP50))
		if sd := b.Seeded; sd != nil && b.Error == "" && b.Skipped == "" {
			row("  the same start, seeded, p50", status{}, fmt.Sprintf("%.2f s", sd.P50),
				fmt.Sprintf("%.2f CPU-s to ready", sd.CPUSecondsP50))
		}
	}
	if c := r.Create; c != nil {
		row("create → Available p50/p90/max", c.status, fmt.Sprintf("%.2f / %.2f / %.2f s", c.P50, c.P90, c.Max),
			fmt.Sprintf("n=%d; p50 milestones: HCP %.2f s, processes %.2f s, /readyz %.2f s; destroy p50 %.2f s",
				c.N, c.Milestones.HostedControlPlane, c.Milestones.Processes, c.Milestones.APIServerReady, c.DestroyP50))
	}
	if r.Ratio != nil {
		row("create / baseline (p50)", status{}, fmt.Sprintf("%.2f×", *r.Ratio), "")
	}
	r.footprintRows(row)
	r.scaleRows(row)
	if rc := r.Recovery; rc != nil {
		recoveryRows(rc, row)
	}
	if h := r.Hibernation; h != nil {
		hibernationRows(h, row)
	}
	if p := r.Peer; p != nil {
		row("peer: kwokctl create p50", p.status, fmt.Sprintf("%.2f s", p.CreateS.P50),
			fmt.Sprintf("%s; kwokctl returned p50 %.2f s", p.Tool, p.KwokctlReturnP50))
		if p.Error == "" && p.Skipped == "" {
			row("peer: RSS per kwok cluster", status{}, fmt.Sprintf("%.0f MiB", p.RSS.P50),
				fmt.Sprintf("PSS %.0f; %s; idle CPU %.1f millicores", p.RSS.PSSP50, formatComponents(p.RSS.ByComponentP50, "%.0f"), p.IdleCPU.P50))
		}
	}
	r.nodeRows(row)
	_ = tw.Flush()

	r.printErrors(w)
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets (✓ met, ✗ missed, ? not measured in this mode):")
	}
	for _, t := range r.Targets {
		mark := "?"
		if t.Met != nil && *t.Met {
			mark = "✓"
		} else if t.Met != nil {
			mark = "✗"
		}
		fmt.Fprintf(w, "  %s %-28s goal %-38s measured %s\n", mark, t.Name, t.Goal, t.Value)
	}
}

func (r *report) printErrors(w io.Writer) {
	errs := map[string]string{}
	if r.Baseline != nil {
		errs["baseline"] = r.Baseline.Error
	}
	if r.Create != nil {
		errs["create"] = r.Create.Error
	}
	if r.RSS != nil {
		errs["rss"] = r.RSS.Error
	}
	if r.Density != nil {
		errs["density"] = r.Density.Error
	}
	if r.Burst != nil {
		errs["burst"] = r.Burst.Error
	}
	if r.Sleepers != nil {
		errs["hibernated_300"] = r.Sleepers.Error
	}
	if r.Peer != nil {
		errs["peer"] = r.Peer.Error
	}
	if r.Recovery != nil {
		errs["recovery"] = r.Recovery.Error
	}
	if r.Hibernation != nil {
		errs["hibernation"] = r.Hibernation.Error
	}
	if r.Nodes != nil {
		errs["nodes_1000"] = r.Nodes.Error
	}
	if r.RealJoin != nil {
		errs["real_node_join"] = r.RealJoin.Error
	}
	if r.HostMachines != nil {
		errs["host_machines"] = r.HostMachines.Error
	}
	if r.KubeRuntime != nil {
		errs["kube_runtime"] = r.KubeRuntime.Error
	}
	header := false
	for _, name := range phaseNames {
		if errs[name] == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nerrors:")
			header = true
		}
		fmt.Fprintf(w, "  %s: %s\n", name, strings.ReplaceAll(errs[name], "\n", "\n    "))
	}
}

// distRow is the row of a latency measured over rounds: p50 and max, or
// "-" when no round measured it.
func distRow(row func(name string, s status, value, notes string), name string, s status, d *dist) {
	if d == nil {
		row(name, s, "-", "")
		return
	}
	row(name, s, fmt.Sprintf("%.2f s p50 (max %.2f)", d.P50, d.Max), fmt.Sprintf("n=%d", d.N))
}

func recoveryRows(rc *recoveryResult, row func(name string, s status, value, notes string)) {
	distRow(row, "recovery: apiserver kill → API back", rc.status, rc.APIServerKillS)
	distRow(row, "recovery: etcd kill → API back", rc.status, rc.EtcdKillS)
	distRow(row, "recovery: management plane restart", rc.status, rc.ManagementRestartS)
	row("recovery: hosted errors while management down", rc.status,
		fmt.Sprintf("%d of %d", rc.HostedErrorsDuringManagementLoss, rc.HostedRequestsDuringManagementLoss),
		"GET /version every 100 ms for 5 s per round")
}

// nodeRows are the rows of the phases with nodes.
func (r *report) nodeRows(row func(name string, s status, value, notes string)) {
	if n := r.Nodes; n != nil {
		nodesRows(n, row)
	}
	if j := r.RealJoin; j != nil {
		realJoinRows(j, row)
	}
	if h := r.HostMachines; h != nil {
		hostMachinesRows(h, row)
	}
	if k := r.KubeRuntime; k != nil {
		kubeRuntimeRows(k, row)
	}
}

func hostMachinesRows(h *hostMachinesResult, row func(name string, s status, value, notes string)) {
	if h.Skipped != "" || h.CreateClusterS == 0 {
		row("host machines: create cluster host --wait", h.status, "-", "")
		return
	}
	row("host machines: create cluster host --wait", h.status, fmt.Sprintf("%.1f s for %d", h.CreateClusterS, h.Machines),
		fmt.Sprintf("network %s; on the same clock: Available %.1f s, first Machine %.1f s",
			h.Network, h.AvailableS, h.FirstMachineS))
	if h.OtherKubeletsAtStart+h.OtherKubeletsAtEnd > 0 {
		row("host machines: other kubelets on the host", h.status, fmt.Sprintf("%d at the start, %d at the end", h.OtherKubeletsAtStart, h.OtherKubeletsAtEnd),
			"machines of another machines directory: they share the CPU")
	}
	if d := h.ReadyS; d != nil {
		notes := fmt.Sprintf("n=%d, polled every 250 ms", d.N)
		if t := h.ReadyByTimestampsS; t != nil {
			notes += fmt.Sprintf("; by timestamps p50 %.0f s, max %.0f s", t.P50, t.Max)
		}
		row("host machine create → Node Ready p50/max", h.status, fmt.Sprintf("%.2f / %.2f s", d.P50, d.Max), notes)
		if ms := h.MilestonesP50S; ms != nil {
			row("  where the time goes (p50 from the Machine)", h.status, fmt.Sprintf("Ready %.2f s", ms["ready"]),
				fmt.Sprintf("bootstrap data %.2f s, provider ID (machine made) %.2f s, Node registered %.2f s", ms["bootstrap_data"], ms["provider_id"], ms["node_registered"]))
		}
	}
	if h.ScaleUpS > 0 {
		notes := fmt.Sprintf("from its Machine; %.2f s from the NodePool's scale %d → %d", h.ScaleUpS, h.Machines, h.Machines+1)
		for _, s := range h.PerMachine {
			if s.ScaleUp {
				notes += fmt.Sprintf("; bootstrap data %.2f s, provider ID %.2f s, Node registered %.2f s", s.BootstrapDataS, s.ProviderIDAtS, s.NodeS)
			}
		}
		row("host machines: one more machine → Node Ready", h.status, fmt.Sprintf("%.2f s", h.ScaleUpMachineS), notes)
	}
	ratio, notes := "n/a", "real_node_join did not measure in this run"
	if q := h.RatioVsRealJoin; q != nil && q.ScaleUp > 0 {
		ratio = fmt.Sprintf("%.2f×", q.ScaleUp)
		notes = fmt.Sprintf("one more machine / host join p50 (%.2f s); create's p50 %.2f×", q.RealJoinReadyP50, q.CreateP50)
	} else if q != nil {
		ratio = fmt.Sprintf("%.2f×", q.CreateP50)
		notes = fmt.Sprintf("create's p50 / host join p50 (%.2f s); no scale-up measured", q.RealJoinReadyP50)
	}
	row("host machine join vs host join", h.status, ratio, notes)
	if m := h.Memory; m != nil {
		row("memory per machine p50/max", h.status, fmt.Sprintf("RSS %.0f / %.0f MiB", m.RSS.P50, m.RSS.Max),
			fmt.Sprintf("n=%d, %.0f s after the last Ready; anon %.0f, PSS %.0f; with its pods RSS %.0f, anon %.0f, PSS %.0f; RSS %s",
				m.RSS.N, m.MeasuredAfterS, m.Anon.P50, m.PSS.P50, m.WithPodsRSS.P50, m.WithPodsAnon.P50, m.WithPodsPSS.P50, formatComponents(m.ByComponentP50, "%.0f")))
	}
	if c := h.ClusterAPIManagerMiB; c != nil {
		row("Cluster API manager RSS", h.status, fmt.Sprintf("%.0f MiB", c.RSS), fmt.Sprintf("anon %.0f MiB", c.Anon))
	}
	if h.DestroyS > 0 {
		row("host machines: destroy cluster --wait", h.status, fmt.Sprintf("%.1f s", h.DestroyS),
			fmt.Sprintf("%d machines; all gone from the host after %.1f s", h.Machines+1, h.MachinesGoneS))
	}
}

func nodesRows(n *nodesResult, row func(name string, s status, value, notes string)) {
	v := fmt.Sprintf("%d of %d Ready", n.Ready, n.Nodes)
	if n.ReadyS > 0 {
		v = fmt.Sprintf("%.1f s for %d", n.ReadyS, n.Nodes)
	}
	row("nodes_1000: all Nodes Ready", n.status, v,
		fmt.Sprintf("from the create request; cluster Available %.1f s, first Node Ready %.1f s, half %.1f s; agent median join %.1f s; %d with a pod range",
			n.AvailableS, n.FirstNodeReadyS, n.HalfReadyS, n.AgentMedianJoinS, n.NodesWithPodCIDR))
	if n.Skipped != "" || n.WindowS == 0 {
		return
	}
	row("nodes_1000: agent CPU / RSS, idle", n.status, fmt.Sprintf("%.3f cores / %.0f MiB", n.AgentCPUCores, n.AgentRSSMiB),
		fmt.Sprintf("after %.0f s idle, over %.0f s; anon %.0f MiB, peak while joining %.0f MiB; %d Ready after",
			n.IdleS, n.WindowS, n.AgentRSSAnonMiB, n.AgentPeakRSSMiB, n.ReadyAfterIdle))
	row("nodes_1000: hosted kube-apiserver CPU", n.status, fmt.Sprintf("%.3f cores", n.APIServerCPUCores),
		fmt.Sprintf("same window; RSS %.0f MiB; hosted by component (cores) %s", n.APIServerRSSMiB, formatComponents(n.HostedCPUCores, "%.3f")))
}

func realJoinRows(j *realJoinResult, row func(name string, s status, value, notes string)) {
	if j.ReadyS == nil {
		row("real node join → Ready p50/max", j.status, "-", "")
		return
	}
	notes := fmt.Sprintf("n=%d; join's own figure %v s; create cluster --wait %.1f s", j.ReadyS.N, j.JoinReportedS, j.CreateClusterS)
	if j.ResetS != nil {
		notes += fmt.Sprintf("; reset p50 %.2f s", j.ResetS.P50)
	}
	row("real node join → Ready p50/max", j.status, fmt.Sprintf("%.2f / %.2f s", j.ReadyS.P50, j.ReadyS.Max), notes)
	if j.KubeletRSSMiB != nil && j.ContainerdRSSMiB != nil {
		daemon := 0.0
		if j.NodeDaemonRSSMiB != nil {
			daemon = j.NodeDaemonRSSMiB.P50
		}
		row("real node RSS once Ready (p50)", j.status, fmt.Sprintf("kubelet %.0f / containerd %.0f MiB", j.KubeletRSSMiB.P50, j.ContainerdRSSMiB.P50),
			fmt.Sprintf("node daemon (hypershift node run) %.0f MiB; node %s", daemon, j.Node))
	}
	if j.DNSS != nil {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(j.DataPlaneRSSMiB)) {
			m := j.DataPlaneRSSMiB[c]
			parts = append(parts, fmt.Sprintf("%s %.0f (anon %.0f)", c, m.RSS, m.Anon))
		}
		row("real node join → cluster DNS answers p50/max", j.status, fmt.Sprintf("%.2f / %.2f s", j.DNSS.P50, j.DNSS.Max),
			"data-plane RSS MiB: "+strings.Join(parts, ", "))
	}
}

// footprintRows prints the idle footprint of both control-plane layouts.
func (r *report) footprintRows(row func(name string, s status, value, notes string)) {
	if s := r.RSS; s != nil {
		row("RSS per idle control plane p50", s.status, fmt.Sprintf("%.0f MiB", s.P50),
			fmt.Sprintf("n=%d after %.0f s; anon %.0f, PSS %.0f; %s", s.Clusters, s.MeasuredAfterS, s.AnonP50, s.PSSP50, formatComponents(s.ByComponentP50, "%.0f")))
	}
	if c := r.IdleCPU; c != nil {
		row("idle CPU per control plane p50", c.status, fmt.Sprintf("%.1f millicores", c.P50),
			fmt.Sprintf("over %.0f s; %s", c.WindowS, formatComponents(c.ByComponentP50, "%.1f")))
	}
	if s, c := r.RSS, r.IdleCPU; s != nil && s.SingleProcess != nil && c != nil && c.SingleProcess != nil {
		row("single-process control plane: RSS / idle CPU p50", s.status, fmt.Sprintf("%.0f MiB / %.1f m", s.SingleProcess.P50, c.SingleProcess.P50),
			fmt.Sprintf("same window; anon %.0f, PSS %.0f; %s", s.SingleProcess.AnonP50, s.SingleProcess.PSSP50, formatComponents(s.SingleProcess.ByComponentP50, "%.0f")))
	}
}

func kubeRuntimeRows(k *kubeRuntimeResult, row func(name string, s status, value, notes string)) {
	if k.Skipped != "" || k.InstallS == 0 {
		row("kube runtime: install → operator available", k.status, "-", "")
		return
	}
	row("kube runtime: install → operator available", k.status, fmt.Sprintf("%.1f s", k.InstallS),
		fmt.Sprintf("mgmt create --wait %.1f s; join → Ready %.1f s; node %s (%s)", k.MgmtCreateS, k.JoinS, k.Node, k.NodeIP))
	if c := k.CreateS; c != nil {
		row("kube runtime: create → Available p50/max", k.status, fmt.Sprintf("%.2f / %.2f s", c.P50, c.Max),
			fmt.Sprintf("n=%d, one cluster per round; the last %d kept for the usage sample", c.N, k.Kept))
	}
	if d := k.DestroyS; d != nil {
		row("kube runtime: destroy --wait p50/max", k.status, fmt.Sprintf("%.2f / %.2f s", d.P50, d.Max), fmt.Sprintf("n=%d", d.N))
	}
	if b := k.Burst; b != nil {
		kubeBurstRows(b, k.status, row)
	}
	u := k.Usage
	if u == nil {
		return
	}
	pc := u.PerControlPlane
	row("kube runtime: per control plane (working set / CPU)", k.status, fmt.Sprintf("%.0f MiB / %.0f m", pc.WorkingSetMiB, pc.CPUMillicores),
		fmt.Sprintf("median of %d, %.0f s after the last was Available; requests %.0f MiB / %.0f m", u.ControlPlanes, u.MeasuredAfterS, pc.RequestMemoryMiB, pc.RequestCPUMillicores))
	for _, c := range slices.Sorted(maps.Keys(u.ByComponent)) {
		cu := u.ByComponent[c]
		row("kube runtime:   "+c, k.status, fmt.Sprintf("%.0f MiB / %.1f m", cu.WorkingSetMiB, cu.CPUMillicores),
			fmt.Sprintf("requests %.0f MiB / %.0f m", cu.RequestMemoryMiB, cu.RequestCPUMillicores))
	}
	row("kube runtime: operator pods working set", k.status, fmt.Sprintf("%v MiB", u.OperatorWorkingSetMiB),
		fmt.Sprintf("CPU %v millicores", u.OperatorCPUMillicores))
}

func kubeBurstRows(b *kubeBurst, s status, row func(name string, s status, value, notes string)) {
	p50 := 0.0
	if b.AvailableS != nil {
		p50 = b.AvailableS.P50
	}
	row("kube runtime: burst, Available in window", s, fmt.Sprintf("%d of %d", b.Available, b.Clusters),
		fmt.Sprintf("created at once; window %.0f s; p50 %.1f s; %d clusters with %d pods Pending: %q", b.WindowS, p50, b.PendingClusters, b.PendingPods, b.Unschedulable))
	row("kube runtime: burst, node CPU requests", s, fmt.Sprintf("%d of %d m", b.RequestedCPUMillicores, b.NodeCPUMillicores),
		fmt.Sprintf("one control plane requests %d m; management API %s", b.ControlPlaneCPUMillicores, b.Management))
}

// scaleRows prints density, burst_100 and hibernated_300.
func (r *report) scaleRows(row func(name string, s status, value, notes string)) {
	if d := r.Density; d != nil {
		row("density: control planes Available", d.status, fmt.Sprintf("%d of %d", d.Reached, d.Target),
			fmt.Sprintf("stop: %s; per control plane: MemAvailable drop %.0f MiB, PSS %.0f MiB, summed RSS %.0f MiB; hosted RSS %.1f GiB, total %.1f GiB; GET /version p50 %.1f ms; create p50 %.2f s, max %.2f s; CPU hosted %.0f m, management %.0f m, operator %.0f m",
				d.StopReason, d.MarginalMiB, d.HostedPSSMiB, d.HostedRSSPerMiB, d.HostedRSSMiB/1024, d.TotalRSSMiB/1024, d.GetP50Ms, d.CreateS.P50, d.CreateS.Max, d.HostedCPU, d.ManagementCPU, d.OperatorCPU))
	}
	if b := r.Burst; b != nil {
		v := fmt.Sprintf("%d/%d Available", b.Available, b.Clusters)
		if b.AllAvailableS > 0 {
			v = fmt.Sprintf("%.1f s for %d", b.AllAvailableS, b.Clusters)
		}
		row("burst: all Available", b.status, v,
			fmt.Sprintf("%s; peak RSS %.1f GiB (with management %.1f); min MemAvailable %.1f GiB; per-cluster p50 %.1f s",
				b.StopReason, b.PeakRSSMiB/1024, b.PeakTotalRSSMiB/1024, b.MinMemAvailableMiB/1024, b.CreateS.P50))
		row("burst: management API GET", b.status, b.Management.String(), "one HostedCluster every 250 ms while the burst ran")
	}
	if s := r.Sleepers; s != nil {
		v := fmt.Sprintf("%d of %d Available", s.AwakeAvailable, s.Awake)
		if s.WakeAllS > 0 {
			v = fmt.Sprintf("%.1f s for %d", s.WakeAllS, s.Awake)
		}
		row("hibernated_300: woken Available", s.status, v,
			fmt.Sprintf("%s; %d hibernated in %.1f s (%.1f MiB each by MemAvailable; management plane + operator RSS %.0f MiB); woken p50 %.1f s; %.0f MiB per awake cluster; GET /version p50 %.1f ms, p99 %.1f ms; CPU hosted %.0f m, management %.0f m, operator %.0f m; management API %s",
				s.StopReason, s.Hibernated, s.AllHibernatedS, s.MiBPerHibernated, s.ManagementRSSMiB, s.WakeS.P50, s.MiBPerAwake, s.GetP50Ms, s.GetP99Ms, s.HostedCPU, s.ManagementCPU, s.OperatorCPU, s.Management))
	}
}
