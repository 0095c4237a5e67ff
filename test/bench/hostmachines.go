package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/nodes/join"
	nodemachine "hypershift.dev/internal/nodes/machine"
)

// hostMachinesResult is host_machines: a hosted cluster of platform Host
// whose NodePool's machines — network namespaces on this host
// (docs/machines.md) — Cluster API makes, each joined as a real node.
type hostMachinesResult struct {
	status
	// Network is the machine network the phase made.
	Network string `json:"network,omitempty"`
	// Machines is the pool's size at creation; the scale-up adds one.
	Machines int `json:"machines"`
	// OtherKubeletsAtStart and OtherKubeletsAtEnd (once its machines were
	// gone) are kubelets this phase did not start (of machines of another
	// machines directory): they share the CPU.
	OtherKubeletsAtStart int `json:"other_kubelets_at_start"`
	OtherKubeletsAtEnd   int `json:"other_kubelets_at_end"`
	// CreateClusterS is `hypershift create cluster host --node-pool-replicas
	// K --wait` until it returned (the pool Ready: K Ready nodes).
	CreateClusterS float64 `json:"create_cluster_wait_s"`
	// AvailableS and FirstMachineS are, on the same clock, when the bench
	// first saw the HostedCluster Available and the first Machine.
	AvailableS    float64 `json:"available_s"`
	FirstMachineS float64 `json:"first_machine_s"`
	// ReadyS is, per Machine of the create, from the Machine first seen to
	// its Node first seen Ready: the Machines (management API) and the Nodes
	// (hosted API) are listed every 250 ms.
	ReadyS *dist `json:"machine_to_node_ready_s,omitempty"`
	// ReadyByTimestampsS is the same from the Machine's creationTimestamp
	// to the Node's Ready lastTransitionTime (whole seconds both).
	ReadyByTimestampsS *dist `json:"machine_to_node_ready_by_timestamps_s,omitempty"`
	// MilestonesP50S says where the create's machines' time goes, from
	// each Machine first seen (p50): its bootstrap data named
	// (bootstrap_data), its provider ID set (provider_id: the machine
	// made, its userdata started), its Node registered, Ready.
	MilestonesP50S map[string]float64 `json:"milestones_p50_s,omitempty"`
	// ScaleUpS is from the NodePool's patch from K to K+1 replicas until the
	// new Node was seen Ready; ScaleUpMachineS from its Machine first seen.
	ScaleUpS        float64 `json:"scale_up_s"`
	ScaleUpMachineS float64 `json:"scale_up_machine_to_node_ready_s"`
	// RatioVsRealJoin compares with the same run's real_node_join; nil when
	// that phase did not measure.
	RatioVsRealJoin *machineRatio `json:"ratio_vs_real_node_join,omitempty"`
	// Memory is per machine, after the scale-up and a settle.
	Memory *machineMemory `json:"memory_per_machine_mib,omitempty"`
	// ClusterAPIManagerMiB is the Cluster API manager of the plane.
	ClusterAPIManagerMiB *memoryMiB `json:"cluster_api_manager_mib,omitempty"`
	// DestroyS is `hypershift destroy cluster --wait` with K+1 machines;
	// MachinesGoneS is from its start until the machines directory held no
	// machine.
	DestroyS      float64         `json:"destroy_cluster_wait_s"`
	MachinesGoneS float64         `json:"machines_gone_s"`
	PerMachine    []machineSample `json:"per_machine,omitempty"`
}

// machineRatio is a machine's join against a host's join of the same run.
type machineRatio struct {
	RealJoinReadyP50 float64 `json:"real_node_join_ready_p50_s"`
	// CreateP50 is machine_to_node_ready_s p50 / real_node_join p50.
	CreateP50 float64 `json:"create_p50"`
	// ScaleUp is scale_up_machine_to_node_ready_s / real_node_join p50:
	// one machine alone against one host join alone.
	ScaleUp float64 `json:"scale_up"`
}

// machineMemory summarizes the machines' memory, each summed over its
// processes.
type machineMemory struct {
	MeasuredAfterS float64 `json:"measured_after_s"`
	// RSS and Anon (VmRSS, RssAnon) of the processes in the machine's
	// network namespace: the node's own (containerd and its shims, the
	// kubelet, the node daemon, kube-proxy, the API server proxy, the pod
	// network).
	RSS  *dist `json:"rss"`
	Anon *dist `json:"anon"`
	// PSS shares each page among the processes that map it: the hypershift
	// binary's pages, which RSS counts once per process, are shared with
	// the other machines and the management plane.
	PSS *dist `json:"pss"`
	// WithPods adds its pods' processes (found in the node's own cgroup
	// root), which have network namespaces of their own.
	WithPodsRSS    *dist              `json:"with_pods_rss"`
	WithPodsAnon   *dist              `json:"with_pods_anon"`
	WithPodsPSS    *dist              `json:"with_pods_pss"`
	ByComponentP50 map[string]float64 `json:"by_component_rss_p50"`
}

// machineSample is one Machine; seconds are from the Machine first seen.
type machineSample struct {
	Machine string `json:"machine"`
	Node    string `json:"node,omitempty"`
	ScaleUp bool   `json:"scale_up,omitempty"`
	// BootstrapDataS: the Machine first named its bootstrap data Secret
	// (spec.bootstrap.dataSecretName); ProviderIDAtS: it first had
	// spec.providerID (its machine made and its userdata started); NodeS:
	// its Node first seen.
	BootstrapDataS     float64 `json:"bootstrap_data_s,omitempty"`
	ProviderIDAtS      float64 `json:"provider_id_s,omitempty"`
	NodeS              float64 `json:"node_registered_s,omitempty"`
	ReadyS             float64 `json:"ready_s,omitempty"`
	ReadyByTimestampsS float64 `json:"ready_by_timestamps_s,omitempty"`
	Processes          int     `json:"processes,omitempty"`
	RSSMiB             float64 `json:"rss_mib,omitempty"`
	AnonMiB            float64 `json:"anon_mib,omitempty"`
	WithPodsRSSMiB     float64 `json:"with_pods_rss_mib,omitempty"`
	WithPodsAnonMiB    float64 `json:"with_pods_anon_mib,omitempty"`
	PSSMiB             float64 `json:"pss_mib,omitempty"`
	WithPodsPSSMiB     float64 `json:"with_pods_pss_mib,omitempty"`
}

const (
	hostMachinesCluster = "hm"
	// providerIDPrefix is the provider ID of a machine of this host.
	providerIDPrefix = "hypershift-host://"
	watchInterval    = 250 * time.Millisecond
)

var machinesGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta2", Resource: "machines"}

// hostMachinesSkipReason says why this host cannot run the phase, or "".
// Machines run beside each other, also those of another machines
// directory, but not beside a node joined to the host itself: that node
// records the kernel-wide parameters at its join and puts them back at its
// reset, and the machines keep a record of the same parameters of their
// own (before the first machine, put back after the last), so interleaved
// each would record the other's values.
func hostMachinesSkipReason(opts *options) string {
	if why := realNodeSkipReason([]string{"ip", "nsenter", "unshare"}, " iproute2 util-linux"); why != "" {
		return why
	}
	bin, err := filepath.EvalSymlinks(opts.bin)
	if err != nil {
		bin = opts.bin
	}
	if err := (clusterapi.Manager{Dir: filepath.Join(filepath.Dir(bin), clusterapi.DirName)}).Check(); err != nil {
		return err.Error()
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	for _, p := range findProcs("component kubelet", " node run ") {
		if (p.component == "kubelet" || p.component == "hypershift node") && netnsOf(p.pid) == self {
			return fmt.Sprintf("a node is joined to this host itself (pid %d: %s); machines keep their own record of the kernel-wide parameters it sets",
				p.pid, truncate(p.cmdline, 100))
		}
	}
	if _, err := net.InterfaceByName(join.Bridge); err == nil {
		return fmt.Sprintf("the CNI bridge %s exists on the host: a node is joined to this host itself (or one was not reset)", join.Bridge)
	}
	return ""
}

func netnsOf(pid int) string {
	link, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "ns", "net"))
	return link
}

// hostMachinesRun is what the phase made, for its clean-up.
type hostMachinesRun struct {
	opts *options
	// dir is the machines directory: beside the plane's data dir, never
	// under it (a purge must not reach into a machine's mounts).
	dir     string
	p       *plane
	created bool // the create ran: the cluster is destroyed on clean-up
	gone    bool // the cluster was destroyed
}

func runHostMachines(ctx context.Context, opts *options) (res *hostMachinesResult) {
	res = &hostMachinesResult{Machines: opts.scaled(3, 2)}
	if why := hostMachinesSkipReason(opts); why != "" {
		res.Skipped = why
		fmt.Printf("   skipped: %s\n", why)
		return res
	}
	res.OtherKubeletsAtStart = len(findProcs("component kubelet "))
	r := &hostMachinesRun{opts: opts, dir: opts.tmp + "-hmx"}
	defer func() {
		if err := r.cleanup(); err != nil {
			res.Error = strings.TrimSpace(res.Error + "\nclean-up: " + err.Error())
		}
	}()
	if err := r.run(ctx, res); err != nil {
		res.Error = err.Error()
	}
	return res
}

func (r *hostMachinesRun) run(ctx context.Context, res *hostMachinesResult) error {
	cidr, err := pickMachineNetwork()
	if err != nil {
		return err
	}
	if out, err := r.machine(ctx, "network", "--cidr", cidr); err != nil {
		return fmt.Errorf("machine network --cidr %s: %w\n%s", cidr, err, out)
	}
	network, err := nodemachine.Host{Dir: r.dir}.Network()
	if err != nil {
		return err
	}
	res.Network = cidr
	opts := *r.opts
	opts.upArgs = append(slices.Clip(r.opts.upArgs), "--machines-dir", r.dir)
	if r.p, err = startPlane(ctx, &opts, r.opts.tmp+"-hm"); err != nil {
		return err
	}
	r.p.endpointHost = network.Gateway.String()
	w, err := newMachineWatch(r.p, hostMachinesCluster)
	if err != nil {
		return err
	}
	stopWatch := w.run(ctx)
	var before []string // the create's Machines, once the scale-up starts
	var scaleStart time.Time
	summarized := false
	defer func() {
		if !summarized { // what was seen before an error
			stopWatch()
			w.summarize(res, before, scaleStart)
		}
	}()

	k := res.Machines
	r.created = true
	out, err := r.p.cli(ctx, "create", "cluster", "host", "--name", hostMachinesCluster,
		"--node-pool-replicas", strconv.Itoa(k), "--wait", "--timeout", "10m")
	if ctx.Err() != nil {
		return errors.New("interrupted during create cluster host")
	}
	if err != nil {
		return fmt.Errorf("create cluster host --node-pool-replicas %d --wait: %w\n%s", k, err, tail(out, 20))
	}
	res.CreateClusterS = round3(time.Since(w.start).Seconds())
	fmt.Printf("   create cluster host with %d machines returned after %.1fs (machine network %s)\n", k, res.CreateClusterS, cidr)
	if err := w.waitReady(ctx, k, nil, time.Minute); err != nil {
		return err
	}

	// One more machine, alone on the otherwise idle cluster.
	before = w.machineNames()
	scaleStart = time.Now()
	np := &hypershiftv1alpha1.NodePool{}
	if err := r.p.client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: hostMachinesCluster}, np); err != nil {
		return fmt.Errorf("get nodepool %s: %w", hostMachinesCluster, err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	np.Spec.Replicas = ptr.To(int32(k + 1))
	if err := r.p.client.Patch(ctx, np, patch); err != nil {
		return fmt.Errorf("scale nodepool %s to %d: %w", hostMachinesCluster, k+1, err)
	}
	if err := w.waitReady(ctx, k+1, before, 5*time.Minute); err != nil {
		return err
	}
	stopWatch()
	w.summarize(res, before, scaleStart)
	summarized = true
	if res.ReadyS != nil {
		fmt.Printf("   Machine → Node Ready: %v s; one more machine: Ready %.1fs after the scale (its Machine → Node Ready %.1fs)\n",
			res.ReadyS.Samples, res.ScaleUpS, res.ScaleUpMachineS)
	}

	settle := r.opts.settle()
	if err := sleep(ctx, settle); err != nil {
		return errors.New("interrupted")
	}
	r.sampleMemory(res, settle)
	res.ClusterAPIManagerMiB = clusterAPIManagerMemory(r.p.dataDir)
	if m := res.Memory; m != nil {
		fmt.Printf("   memory per machine: RSS p50 %.0f MiB (anon %.0f, PSS %.0f), with its pods %.0f MiB (anon %.0f, PSS %.0f)\n",
			m.RSS.P50, m.Anon.P50, m.PSS.P50, m.WithPodsRSS.P50, m.WithPodsAnon.P50, m.WithPodsPSS.P50)
	}

	start := time.Now()
	if out, err := r.p.cli(ctx, "destroy", "cluster", "--name", hostMachinesCluster, "--wait", "--timeout", "5m"); err != nil {
		return fmt.Errorf("destroy cluster --wait: %w\n%s", err, tail(out, 20))
	}
	res.DestroyS = round3(time.Since(start).Seconds())
	r.gone = true
	if err := r.waitMachinesGone(ctx, 2*time.Minute); err != nil {
		return err
	}
	res.MachinesGoneS = round3(time.Since(start).Seconds())
	res.OtherKubeletsAtEnd = len(findProcs("component kubelet "))
	fmt.Printf("   destroy cluster --wait with %d machines: %.1fs, machines gone after %.1fs\n", k+1, res.DestroyS, res.MachinesGoneS)
	return nil
}

// machine runs `hypershift machine --machines-dir DIR ARGS…` in a process
// group of its own.
func (r *hostMachinesRun) machine(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.opts.bin, append([]string{"machine", "--machines-dir", r.dir}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.CombinedOutput()
}

func (r *hostMachinesRun) machines() []nodemachine.Record {
	records, _ := nodemachine.Host{Dir: r.dir}.List()
	return records
}

func (r *hostMachinesRun) waitMachinesGone(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		left := r.machines()
		if len(left) == 0 {
			return nil
		}
		if sleep(ctx, watchInterval) != nil {
			return fmt.Errorf("%d machines still in %s %s after the cluster was destroyed", len(left), r.dir, timeout)
		}
	}
}

// cleanup removes what the phase made, in order, on a context of its own
// (it also runs after an error or Ctrl-C): the cluster (its machines go
// with it), the management plane (`down --purge` deletes the machines it made), any
// machine left, the machine network, the directories.
func (r *hostMachinesRun) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var errs []error
	if r.p != nil {
		if r.created && !r.gone {
			start := time.Now()
			if out, err := r.p.cli(ctx, "destroy", "cluster", "--name", hostMachinesCluster, "--wait", "--timeout", "5m"); err != nil {
				errs = append(errs, fmt.Errorf("destroy cluster --wait: %w\n%s", err, tail(out, 10)))
			}
			if err := r.waitMachinesGone(ctx, 2*time.Minute); err != nil {
				errs = append(errs, err)
			}
			fmt.Printf("   cluster %s destroyed, its machines gone, in %s\n", hostMachinesCluster, time.Since(start).Round(100*time.Millisecond))
		}
		r.p.stop()
	}
	for _, m := range r.machines() {
		fmt.Fprintf(os.Stderr, "   warning: machine %s left in %s; deleting it\n", m.Name, r.dir)
		if out, err := r.machine(ctx, "delete", m.Name); err != nil {
			errs = append(errs, fmt.Errorf("machine delete %s: %w\n%s", m.Name, err, tail(out, 10)))
		}
	}
	if _, err := (nodemachine.Host{Dir: r.dir}).Network(); err == nil {
		if out, err := r.machine(ctx, "network", "--delete"); err != nil {
			errs = append(errs, fmt.Errorf("machine network --delete: %w\n%s", err, tail(out, 10)))
		}
	}
	removeNodeRoot(r.dir)
	return errors.Join(errs...)
}

// pickMachineNetwork is a /24 of 10.213.0.0/16 that no route of the host
// overlaps, from a random start.
func pickMachineNetwork() (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return "", fmt.Errorf("ip route: %w", err)
	}
	var used []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		switch dst {
		case "local", "broadcast", "unicast", "multicast", "unreachable", "blackhole", "prohibit", "throw", "anycast", "nat":
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if dst == "default" {
			continue
		}
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		if _, n, err := net.ParseCIDR(dst); err == nil {
			used = append(used, n)
		}
	}
	first := rand.IntN(256)
	for i := range 256 {
		subnet := &net.IPNet{IP: net.IPv4(10, 213, byte((first+i)%256), 0).To4(), Mask: net.CIDRMask(24, 32)}
		if !slices.ContainsFunc(used, func(o *net.IPNet) bool { return o.Contains(subnet.IP) || subnet.Contains(o.IP) }) {
			return subnet.String(), nil
		}
	}
	return "", errors.New("no /24 of 10.213.0.0/16 is free of the host's routes")
}

// machineWatch lists the cluster's Machines (management API) and its
// Nodes (hosted API) every 250 ms and records when each was first seen in
// each state.
type machineWatch struct {
	p         *plane
	name      string
	machines  dynamic.ResourceInterface
	start     time.Time
	mu        sync.Mutex
	kube      kubernetes.Interface
	available time.Time
	seen      map[string]*seenMachine // by Machine name
	nodes     map[string]*seenNode    // by provider ID
}

type seenMachine struct {
	seen, created, bootstrapAt, providerIDAt time.Time
	providerID                               string
}

type seenNode struct {
	name                    string
	seen, ready, readySince time.Time
}

func newMachineWatch(p *plane, name string) (*machineWatch, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(p.dataDir, "management.kubeconfig"))
	if err != nil {
		return nil, fmt.Errorf("load management kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &machineWatch{
		p:        p,
		name:     name,
		machines: dyn.Resource(machinesGVR).Namespace(clusterNamespace + "-" + name),
		start:    time.Now(),
		seen:     map[string]*seenMachine{},
		nodes:    map[string]*seenNode{},
	}, nil
}

// run polls until the returned stop is called (idempotent) or ctx ends.
func (w *machineWatch) run(ctx context.Context) func() {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(watchInterval)
		defer tick.Stop()
		for {
			w.poll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (w *machineWatch) poll(ctx context.Context) {
	w.pollMachines(ctx)
	if w.available.IsZero() {
		hc := &hypershiftv1alpha1.HostedCluster{}
		if err := w.p.client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: w.name}, hc); err == nil && isAvailable(hc) {
			w.mu.Lock()
			w.available = time.Now()
			w.mu.Unlock()
		}
	}
	w.pollNodes(ctx)
}

func (w *machineWatch) pollMachines(ctx context.Context) {
	// Until Cluster API's CRDs exist the list fails; that is no Machine yet.
	if list, err := w.machines.List(ctx, metav1.ListOptions{}); err == nil {
		now := time.Now()
		w.mu.Lock()
		for _, m := range list.Items {
			s := w.seen[m.GetName()]
			if s == nil {
				s = &seenMachine{seen: now, created: m.GetCreationTimestamp().Time}
				w.seen[m.GetName()] = s
			}
			if data, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "dataSecretName"); data != "" && s.bootstrapAt.IsZero() {
				s.bootstrapAt = now
			}
			if id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID"); id != "" && s.providerID == "" {
				s.providerID, s.providerIDAt = id, now
			}
		}
		w.mu.Unlock()
	}
}

func (w *machineWatch) pollNodes(ctx context.Context) {
	if w.kube == nil {
		cfg, err := w.p.hostedRESTConfig(ctx, w.name)
		if err != nil {
			return // no kubeconfig yet
		}
		kube, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return
		}
		w.mu.Lock()
		w.kube = kube
		w.mu.Unlock()
	}
	nodes, err := w.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Spec.ProviderID, providerIDPrefix) {
			continue
		}
		s := w.nodes[n.Spec.ProviderID]
		if s == nil {
			s = &seenNode{name: n.Name, seen: now}
			w.nodes[n.Spec.ProviderID] = s
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && s.ready.IsZero() {
				s.ready, s.readySince = now, c.LastTransitionTime.Time
			}
		}
	}
}

func (w *machineWatch) machineNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for name := range w.seen {
		names = append(names, name)
	}
	return names
}

// readyMachines counts the Machines not in except whose Node was seen
// Ready.
func (w *machineWatch) readyMachines(except []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for name, m := range w.seen {
		if slices.Contains(except, name) || m.providerID == "" {
			continue
		}
		if node := w.nodes[m.providerID]; node != nil && !node.ready.IsZero() {
			n++
		}
	}
	return n
}

// waitReady waits until want Machines have a Ready Node, except counting
// those before (already there).
func (w *machineWatch) waitReady(ctx context.Context, want int, before []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		got := w.readyMachines(before) + len(before)
		if got >= want {
			return nil
		}
		if sleep(ctx, watchInterval) != nil {
			return fmt.Errorf("%d of %d machines with a Ready Node after %s", got, want, timeout)
		}
	}
}

// summarize computes the latencies: the Machines of before are those of
// the create, any other is the scale-up's, made after scaleStart; before
// nil (no scale-up yet), all are the create's.
func (w *machineWatch) summarize(res *hostMachinesResult, before []string, scaleStart time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	since := func(t, from time.Time) float64 {
		if t.IsZero() || from.IsZero() {
			return 0
		}
		return round3(t.Sub(from).Seconds())
	}
	res.AvailableS = since(w.available, w.start)
	var ready, byTimestamps []float64
	milestones := map[string][]float64{}
	for _, name := range slices.Sorted(maps.Keys(w.seen)) {
		m := w.seen[name]
		if first := since(m.seen, w.start); res.FirstMachineS == 0 || first < res.FirstMachineS {
			res.FirstMachineS = first
		}
		s := machineSample{
			Machine: name, ScaleUp: before != nil && !slices.Contains(before, name),
			BootstrapDataS: since(m.bootstrapAt, m.seen), ProviderIDAtS: since(m.providerIDAt, m.seen),
		}
		if !s.ScaleUp {
			milestones["bootstrap_data"] = appendPositive(milestones["bootstrap_data"], s.BootstrapDataS)
			milestones["provider_id"] = appendPositive(milestones["provider_id"], s.ProviderIDAtS)
		}
		if node := w.nodes[m.providerID]; node != nil {
			s.Node = node.name
			s.NodeS = since(node.seen, m.seen)
			s.ReadyS = since(node.ready, m.seen)
			s.ReadyByTimestampsS = since(node.readySince, m.created)
			if s.ScaleUp {
				res.ScaleUpS = since(node.ready, scaleStart)
				res.ScaleUpMachineS = s.ReadyS
			} else {
				ready = appendPositive(ready, s.ReadyS)
				milestones["node_registered"] = appendPositive(milestones["node_registered"], s.NodeS)
				milestones["ready"] = appendPositive(milestones["ready"], s.ReadyS)
				byTimestamps = appendPositive(byTimestamps, s.ReadyByTimestampsS)
			}
		}
		res.PerMachine = append(res.PerMachine, s)
	}
	res.ReadyS = summarizeIfAny(ready)
	res.ReadyByTimestampsS = summarizeIfAny(byTimestamps)
	if len(ready) > 0 {
		res.MilestonesP50S = map[string]float64{}
		for k, v := range milestones {
			res.MilestonesP50S[k] = median(v)
		}
	}
}

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
