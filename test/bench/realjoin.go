package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"hypershift.dev/internal/nodes/join"
)

// realJoinResult is real_node_join: this host joined to a None cluster as
// a real node (a private containerd and the compiled-in kubelet) with the
// printed `hypershift join` line, then reset, once per round.
type realJoinResult struct {
	status
	Rounds int `json:"rounds"`
	// CreateClusterS is `hypershift create cluster none --wait` until it
	// returned with the join line.
	CreateClusterS float64 `json:"create_cluster_wait_s"`
	Node           string  `json:"node"`
	// ReadyS is from starting the join line until it exited, which it does
	// once its Node is Ready.
	ReadyS *dist `json:"ready_s,omitempty"`
	// JoinReportedS is the join's own "node X is Ready (N.Ns)".
	JoinReportedS []float64 `json:"join_reported_s"`
	// ResetS is `hypershift join --reset` until it exited.
	ResetS *dist `json:"reset_s,omitempty"`
	// RSS of the node's processes (command line naming the node dir) right
	// after the join returned.
	KubeletRSSMiB    *dist `json:"kubelet_rss_mib,omitempty"`
	ContainerdRSSMiB *dist `json:"containerd_rss_mib,omitempty"`
	NodeDaemonRSSMiB *dist `json:"node_daemon_rss_mib,omitempty"`
	// DNSS is from starting the join line until cluster DNS (the kube-dns
	// ClusterIP, through the node's kube-proxy) answered
	// kubernetes.default.svc.cluster.local from the host.
	DNSS *dist `json:"join_to_dns_s,omitempty"`
	// DataPlaneRSSMiB is, once DNS answered, the RSS (and anonymous RSS) of
	// each data-plane process of the node by component: kube-proxy and the
	// API server proxy (node processes), coredns and konnectivity-agent
	// (pods, found in the node's own cgroup root).
	DataPlaneRSSMiB map[string]memoryMiB `json:"data_plane_rss_mib,omitempty"`
}

// memoryMiB is one process's resident memory.
type memoryMiB struct {
	RSS  float64 `json:"rss"`
	Anon float64 `json:"anon"`
}

// realJoinSkipReason says why this host cannot run the phase, or "".
func realJoinSkipReason() string {
	if why := realNodeSkipReason(nil, ""); why != "" {
		return why
	}
	// A node shares host-wide things with any other node on the host (the
	// kubepods cgroups, the CNI bridge, iptables chains), and a reset
	// removes them: never join next to one.
	for _, p := range findProcs("component kubelet", " node run ") {
		if p.component == "kubelet" || p.component == "hypershift node" {
			return fmt.Sprintf("another node already runs on this host (pid %d: %s); two nodes would share its cgroups, CNI bridge and iptables chains",
				p.pid, truncate(p.cmdline, 100))
		}
	}
	if _, err := net.InterfaceByName(join.Bridge); err == nil {
		return fmt.Sprintf("the CNI bridge %s exists: another node is joined to this host (or one was not reset)", join.Bridge)
	}
	return ""
}

// realNodeSkipReason says why this host cannot run a real node, or "": not
// root, or a program or the CNI bridge plugin missing. extra are further
// programs needed, installed by extraPackages.
func realNodeSkipReason(extra []string, extraPackages string) string {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Sprintf("not running as root (uid %d): a real node runs containerd and the kubelet, which need root", uid)
	}
	var missing []string
	for _, prog := range append([]string{"containerd", "runc", "iptables-save"}, extra...) {
		if _, err := exec.LookPath(prog); err != nil {
			missing = append(missing, prog)
		}
	}
	if bridge := filepath.Join(join.DefaultCNIBinDir, "bridge"); !fileExists(bridge) {
		missing = append(missing, bridge)
	}
	if len(missing) > 0 {
		return "missing on this host: " + strings.Join(missing, ", ") +
			" (apt-get install -y containerd runc containernetworking-plugins iptables" + extraPackages + ")"
	}
	return ""
}

func runRealJoin(ctx context.Context, opts *options) *realJoinResult {
	res := &realJoinResult{Rounds: opts.scaled(3, 1)}
	if why := realJoinSkipReason(); why != "" {
		res.Skipped = why
		fmt.Printf("   skipped: %s\n", why)
		return res
	}
	p, err := startPlane(ctx, opts, opts.tmp+"-j")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	// The node's own dir, next to the plane's: a reset removes it, and the
	// plane's purge never reaches into a node's mounts.
	nodeRoot := opts.tmp + "-jn"
	nodeDir := filepath.Join(nodeRoot, "node")
	defer removeNodeRoot(nodeRoot)

	const name = "rj"
	start := time.Now()
	out, err := p.cli(ctx, "create", "cluster", "none", "--name", name, "--wait", "--timeout", "5m")
	if err != nil {
		res.Error = fmt.Sprintf("create cluster none --wait: %v\n%s", err, out)
		return res
	}
	res.CreateClusterS = round3(time.Since(start).Seconds())
	line, err := joinLine(out)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	cfg, err := p.hostedKubeconfig(ctx, name)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	fmt.Printf("   cluster %s Available with its join line after %.1fs\n", name, res.CreateClusterS)

	var ready, resets, kubelet, containerd, daemon, dns []float64
	for round := 1; round <= res.Rounds && ctx.Err() == nil; round++ {
		if round > 1 {
			// Every round joins with a token of its own.
			out, err := p.cli(ctx, "create", "join-command", "--name", name)
			if err != nil {
				res.Error = fmt.Sprintf("create join-command: %v\n%s", err, out)
				break
			}
			if line, err = joinLine(out); err != nil {
				res.Error = err.Error()
				break
			}
		}
		r, err := joinRound(ctx, p, kube, line, nodeDir)
		if r.readyS > 0 {
			ready = append(ready, r.readyS)
			res.JoinReportedS = append(res.JoinReportedS, r.reportedS)
			kubelet = appendPositive(kubelet, r.rss["kubelet"])
			containerd = appendPositive(containerd, r.rss["containerd"])
			daemon = appendPositive(daemon, r.rss["hypershift node"])
			dns = appendPositive(dns, r.dnsS)
			if len(r.dataPlane) > 0 {
				res.DataPlaneRSSMiB = r.dataPlane
			}
		}
		if r.resetS > 0 {
			resets = append(resets, r.resetS)
		}
		if r.node != "" {
			res.Node = r.node
		}
		if err != nil {
			res.Error = fmt.Sprintf("round %d: %v", round, err)
			break
		}
		fmt.Printf("   round %d: node %s Ready, join exited after %.2fs (it reported %.1fs), cluster DNS answered after %.2fs; kubelet %.0f MiB, containerd %.0f MiB; data plane %v; reset %.2fs\n",
			round, r.node, r.readyS, r.reportedS, r.dnsS, r.rss["kubelet"], r.rss["containerd"], r.dataPlane, r.resetS)
	}
	res.ReadyS = summarizeIfAny(ready)
	res.ResetS = summarizeIfAny(resets)
	res.KubeletRSSMiB = summarizeIfAny(kubelet)
	res.ContainerdRSSMiB = summarizeIfAny(containerd)
	res.NodeDaemonRSSMiB = summarizeIfAny(daemon)
	res.DNSS = summarizeIfAny(dns)
	return res
}

type joinRoundResult struct {
	node                      string
	readyS, reportedS, resetS float64
	// dnsS is from the start of the join until cluster DNS answered.
	dnsS float64
	// rss by process name, MiB.
	rss map[string]float64
	// dataPlane is the data-plane processes' memory once DNS answered.
	dataPlane map[string]memoryMiB
}

var readyLine = regexp.MustCompile(`node (\S+) is Ready \((\d+(?:\.\d+)?)s\)`)

// joinRound runs one join line with --node-dir and times it until it
// exits. Whatever happens — a failed join, Ctrl-C — it then runs `join
// --reset` on a context of its own, and deletes the Node so that the next
// round does not find the old one's Ready status.
func joinRound(ctx context.Context, p *plane, kube kubernetes.Interface, args []string, nodeDir string) (r joinRoundResult, err error) {
	if err := requireLoopback(flagAfter(args, "--server")); err != nil {
		return r, err
	}
	r.node = defaultNodeName()
	defer func() {
		resetS, resetErr := resetNode(p, nodeDir)
		r.resetS = resetS
		if err != nil && resetS > 0 {
			fmt.Printf("   join --reset ran after the failed round (%.2fs)\n", resetS)
		}
		err = errors.Join(err, resetErr, deleteNode(kube, r.node))
	}()
	start := time.Now()
	out, runErr := p.hypershift(ctx, append(args, "--node-dir", nodeDir)...)
	elapsed := round3(time.Since(start).Seconds())
	if ctx.Err() != nil {
		return r, fmt.Errorf("interrupted during the join:\n%s", tail(out, 20))
	}
	if runErr != nil {
		return r, fmt.Errorf("hypershift join: %w\n%s", runErr, tail(out, 20))
	}
	m := readyLine.FindSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("join exited without reporting a Ready node:\n%s", tail(out, 20))
	}
	r.readyS = elapsed
	r.node = string(m[1])
	r.reportedS, _ = strconv.ParseFloat(string(m[2]), 64)
	r.rss = map[string]float64{}
	for _, pr := range findProcs(nodeDir+"/", nodeDir+" ") {
		if mem, ok := readMemory(pr.pid, false); ok {
			r.rss[pr.component] = round1(r.rss[pr.component] + mem.rss/1024)
		}
	}
	dnsS, err := waitClusterDNS(ctx, kube, start)
	if err != nil {
		return r, err
	}
	r.dnsS = dnsS
	r.dataPlane = dataPlaneMemory(nodeDir)
	return r, nil
}

// resetNode runs `hypershift join --reset` for the node dir; it is also the
// clean-up after an error or Ctrl-C, so it has a context of its own. What
// still names the node dir afterwards is killed by pid and reported.
func resetNode(p *plane, nodeDir string) (float64, error) {
	if !fileExists(nodeDir) {
		return 0, nil // the join stopped before it made anything
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := p.hypershift(ctx, "join", "--reset", "--node-dir", nodeDir)
	elapsed := round3(time.Since(start).Seconds())
	if err != nil {
		err = fmt.Errorf("join --reset --node-dir %s: %w\n%s", nodeDir, err, tail(out, 20))
	}
	if n := killUnder(nodeDir); n > 0 {
		err = errors.Join(err, fmt.Errorf("join --reset left %d processes naming %s (killed)", n, nodeDir))
	}
	return elapsed, err
}

// deleteNode removes the Node a round registered and waits until it is
// gone: a kubelet may not delete its own Node, and `join --reset` leaves it.
func deleteNode(kube kubernetes.Interface, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	for {
		if _, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("node %s still present after a minute", name)
		}
	}
}

// removeNodeRoot is the phase's last clean-up: anything left naming the
// node's dirs is killed by pid; the dirs are removed unless something is
// still mounted under them (a reset that failed), which is reported.
func removeNodeRoot(nodeRoot string) {
	if n := killUnder(nodeRoot); n > 0 {
		fmt.Fprintf(os.Stderr, "   warning: killed %d processes left under %s\n", n, nodeRoot)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(" "+nodeRoot+"/")) {
		fmt.Fprintf(os.Stderr, "   warning: mounts remain under %s; left in place (see /proc/self/mountinfo)\n", nodeRoot)
		return
	}
	_ = os.RemoveAll(nodeRoot)
}

// joinLine finds the `hypershift join …` line the CLI printed and returns
// its arguments after the program name.
func joinLine(out []byte) ([]string, error) {
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == "hypershift" && f[1] == "join" {
			return f[1:], nil
		}
	}
	return nil, fmt.Errorf("no `hypershift join` line in:\n%s", out)
}

func flagAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// defaultNodeName is the name `hypershift join` gives the Node without
// --node-name: the host name in lower case.
func defaultNodeName() string {
	host, _ := os.Hostname()
	return strings.ToLower(host)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func appendPositive(xs []float64, v float64) []float64 {
	if v > 0 {
		return append(xs, v)
	}
	return xs
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
