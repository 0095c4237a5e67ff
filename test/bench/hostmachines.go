package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/hostnet"
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
	used, err := hostnet.RoutePrefixes()
	if err != nil {
		return "", err
	}
	first := rand.IntN(256)
	for i := range 256 {
		subnet := &net.IPNet{IP: net.IPv4(10, 213, byte((first+i)%256), 0).To4(), Mask: net.CIDRMask(24, 32)}
		if !hostnet.OverlapsAny(subnet, used) {
			return subnet.String(), nil
		}
	}
	return "", errors.New("no /24 of 10.213.0.0/16 is free of the host's routes")
}
