package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/nodes/simulated"
)

// nodesIdle is how long the nodes idle after the last is Ready before
// the agent's and the API server's CPU is measured.
const nodesIdle = 30 * time.Second

// nodesClusterCIDR is the pod network of the nodes_1000 cluster.
const nodesClusterCIDR = "10.128.0.0/12"

// nodesResult is nodes_1000: one hosted cluster whose Simulated NodePool
// asks for all its nodes at once, then the cost of keeping them.
type nodesResult struct {
	status
	// Nodes is the NodePool's size (1,000; quick: 100); Ready how many
	// Nodes the hosted API last listed as Ready.
	Nodes int `json:"nodes"`
	Ready int `json:"ready"`
	// ReadyS is from starting `hypershift create cluster simulated
	// --node-pool-replicas N` until the hosted API lists N Ready Nodes
	// (polled every second). The milestones below are on the same clock.
	ReadyS          float64 `json:"ready_s"`
	CreateCommandS  float64 `json:"create_command_s"`
	AvailableS      float64 `json:"cluster_available_s"`
	FirstNodeReadyS float64 `json:"first_node_ready_s"`
	HalfReadyS      float64 `json:"half_ready_s"`
	// NodesWithPodCIDR counts Nodes the hosted controller manager gave a
	// pod range (the cluster network's size bounds it).
	NodesWithPodCIDR int `json:"nodes_with_pod_cidr"`
	// AgentMedianJoinS is the agent's own median join time (its /status).
	AgentMedianJoinS float64 `json:"agent_median_join_s"`
	// Measured after IdleS of idling, CPU over WindowS.
	IdleS   float64 `json:"idle_s"`
	WindowS float64 `json:"window_s"`
	// The simulated agent: CPU in cores, memory at the start of the window.
	AgentCPUCores   float64 `json:"agent_cpu_cores"`
	AgentRSSMiB     float64 `json:"agent_rss_mib"`
	AgentRSSAnonMiB float64 `json:"agent_rss_anon_mib"`
	// AgentPeakRSSMiB is the largest RSS seen while the nodes joined.
	AgentPeakRSSMiB float64 `json:"agent_peak_rss_mib"`
	// The hosted kube-apiserver in the same window.
	APIServerCPUCores float64 `json:"apiserver_cpu_cores"`
	APIServerRSSMiB   float64 `json:"apiserver_rss_mib"`
	// HostedCPUCores splits the hosted control plane's CPU by component.
	HostedCPUCores map[string]float64 `json:"hosted_cpu_cores_by_component"`
	// ReadyAfterIdle is the Ready count after the window: the nodes kept
	// their Leases and status up.
	ReadyAfterIdle int `json:"ready_after_idle"`
}

func runNodes(ctx context.Context, opts *options) *nodesResult {
	res := &nodesResult{Nodes: opts.scaled(1000, 100)}
	timeout := time.Duration(opts.scaled(15, 5)) * time.Minute
	p, err := startPlane(ctx, opts, opts.tmp+"-n")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()

	const name = "sim"
	start := time.Now()
	since := func() float64 { return round3(time.Since(start).Seconds()) }
	if out, err := p.cli(ctx, "create", "cluster", "simulated", "--name", name, "--node-pool-replicas", strconv.Itoa(res.Nodes),
		// /12 with a /23 per node has pod ranges for 2,048 nodes (the default
		// /14 for 512).
		"--cluster-cidr", nodesClusterCIDR); err != nil {
		res.Error = fmt.Sprintf("create cluster simulated: %v\n%s", err, out)
		return res
	}
	res.CreateCommandS = since()
	if err := p.waitAvailable(ctx, name, timeout, nil); err != nil {
		res.Error = err.Error()
		return res
	}
	res.AvailableS = since()
	fmt.Printf("   cluster %s Available %.1fs after the request (the command returned at %.1fs)\n", name, res.AvailableS, res.CreateCommandS)
	cfg, err := p.hostedKubeconfig(ctx, name)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	// Listing 1,000 Nodes every second: protobuf, from the watch cache,
	// to weigh as little as possible on what is measured.
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cfg.Timeout = 30 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}

	if err := waitNodesReady(ctx, p, kube, res, start, timeout); err != nil {
		res.Error = err.Error()
		return res
	}
	fmt.Printf("   all %d Nodes Ready %.1fs after the request (first %.1fs, half %.1fs); %d have a pod range\n",
		res.Nodes, res.ReadyS, res.FirstNodeReadyS, res.HalfReadyS, res.NodesWithPodCIDR)
	fmt.Printf("   idling %s before measuring\n", nodesIdle)
	if err := sleep(ctx, nodesIdle); err != nil {
		res.Error = "interrupted while idling"
		return res
	}
	if err := measureNodes(ctx, p, kube, name, res); err != nil {
		res.Error = err.Error()
	}
	return res
}

// waitNodesReady lists the hosted cluster's Nodes every second until
// res.Nodes are Ready, recording the milestones from start; it samples the
// agent's RSS meanwhile.
func waitNodesReady(ctx context.Context, p *plane, kube kubernetes.Interface, res *nodesResult, start time.Time, timeout time.Duration) error {
	since := func() float64 { return round3(time.Since(start).Seconds()) }
	deadline := start.Add(timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastPrint := time.Now()
	for {
		if ready, withCIDR, err := countReadyNodes(ctx, kube); err == nil {
			res.Ready, res.NodesWithPodCIDR = ready, withCIDR
			if ready > 0 && res.FirstNodeReadyS == 0 {
				res.FirstNodeReadyS = since()
			}
			if 2*ready >= res.Nodes && res.HalfReadyS == 0 {
				res.HalfReadyS = since()
			}
			if ready >= res.Nodes {
				res.ReadyS = since()
				return nil
			}
		}
		for _, a := range agentProcs(p) {
			if m, ok := readMemory(a.pid, false); ok && m.rss/1024 > res.AgentPeakRSSMiB {
				res.AgentPeakRSSMiB = round1(m.rss / 1024)
			}
		}
		if time.Since(lastPrint) >= 15*time.Second {
			fmt.Printf("   %4d of %d Nodes Ready at %.0fs\n", res.Ready, res.Nodes, since())
			lastPrint = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Nodes Ready after %s", res.Ready, res.Nodes, timeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted with %d of %d Nodes Ready", res.Ready, res.Nodes)
		case <-tick.C:
		}
	}
}

// measureNodes measures the agent and the hosted control plane over one
// CPU window.
func measureNodes(ctx context.Context, p *plane, kube kubernetes.Interface, cluster string, res *nodesResult) error {
	res.IdleS, res.WindowS = nodesIdle.Seconds(), cpuWindow.Seconds()
	agents := agentProcs(p)
	if len(agents) != 1 {
		return fmt.Errorf("want one %s process under %s, found %d", simulated.Component, p.dataDir, len(agents))
	}
	fps, err := measureGroups(ctx, [][]proc{agents, findProcs(p.clusterDir(cluster))}, cpuWindow)
	if err != nil {
		return err
	}
	agent, hosted := fps[0], fps[1]
	res.AgentCPUCores = round3(agent.cpuMillicores / 1000)
	res.AgentRSSMiB, res.AgentRSSAnonMiB = round1(agent.rssMiB), round1(agent.anonMiB)
	api := hosted.byComponent[components.KubeAPIServer]
	res.APIServerCPUCores, res.APIServerRSSMiB = round3(api.cpuMillicores/1000), round1(api.rssMiB)
	res.HostedCPUCores = map[string]float64{}
	for c, u := range hosted.byComponent {
		res.HostedCPUCores[c] = round3(u.cpuMillicores / 1000)
	}
	if ready, _, err := countReadyNodes(ctx, kube); err == nil {
		res.ReadyAfterIdle = ready
	}
	res.AgentMedianJoinS = agentMedianJoin(ctx, agents[0])
	fmt.Printf("   after %s idle, over %s: agent %.3f cores, RSS %.0f MiB (anon %.0f, peak while joining %.0f); kube-apiserver %.3f cores, RSS %.0f MiB; %d Ready after the window\n",
		nodesIdle, cpuWindow, res.AgentCPUCores, res.AgentRSSMiB, res.AgentRSSAnonMiB, res.AgentPeakRSSMiB,
		res.APIServerCPUCores, res.APIServerRSSMiB, res.ReadyAfterIdle)
	return nil
}

// countReadyNodes lists the hosted cluster's Nodes and counts the Ready
// ones and those with a pod range.
func countReadyNodes(ctx context.Context, kube kubernetes.Interface) (ready, withCIDR int, err error) {
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		n := &list.Items[i]
		if n.Spec.PodCIDR != "" {
			withCIDR++
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, withCIDR, nil
}

// agentProcs finds the plane's simulated agents: `hypershift component
// simulated-agent`, run by the NodePool controller under DATA/nodes/.
func agentProcs(p *plane) []proc {
	var out []proc
	for _, pr := range findProcs(p.dataDir + "/nodes/") {
		if pr.component == simulated.Component {
			out = append(out, pr)
		}
	}
	return out
}

// agentMedianJoin reads the agent's median join time from its loopback
// /status endpoint; 0 when it cannot.
func agentMedianJoin(ctx context.Context, agent proc) float64 {
	var addr string
	for _, arg := range strings.Fields(agent.cmdline) {
		if v, ok := strings.CutPrefix(arg, "--health-address="); ok {
			addr = v
		}
	}
	url := "http://" + addr + "/status"
	if addr == "" || requireLoopback(url) != nil {
		return 0
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "medianJoinSeconds "); ok {
			s, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return round3(s)
		}
	}
	return 0
}
