package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/scheme"
)

// kubeBurst is the kube runtime's burst: clusters created at once in the
// management cluster. No start queue applies there: each control plane's
// pods ask the scheduler for their requests, and those that do not fit
// stay Pending until room is made.
type kubeBurst struct {
	Clusters int     `json:"clusters"`
	WindowS  float64 `json:"window_s"`
	// Available is how many were Available by the end of the window;
	// AvailableS their times from the first create.
	Available  int   `json:"available"`
	AvailableS *dist `json:"create_to_available_s,omitempty"`
	// PendingClusters have a pod the scheduler did not place by the end
	// of the window; Unschedulable is what it said of one.
	PendingClusters int    `json:"pending_clusters"`
	PendingPods     int    `json:"pending_pods"`
	Unschedulable   string `json:"unschedulable_message,omitempty"`
	// The node's allocatable CPU, what the pods placed on it request in
	// all, and what one control plane's pods request.
	NodeCPUMillicores         int64 `json:"node_allocatable_millicores"`
	RequestedCPUMillicores    int64 `json:"node_requested_millicores"`
	ControlPlaneCPUMillicores int64 `json:"control_plane_requests_millicores"`
	// Management is GET of one HostedCluster of the management cluster
	// every 250 ms during the window.
	Management mgmtLatency `json:"management_api"`
}

func kubeBurstSize(o *options) (clusters int, window time.Duration) {
	return o.scaled(8, 4), time.Duration(o.scaled(5, 3)) * time.Minute
}

func kubeBurstName(i int) string { return fmt.Sprintf("kb%d", i+1) }

// runKubeBurst creates the burst's clusters at once with mgmt (the CLI
// against the management cluster), watches them for the window, records
// what the scheduler did, and destroys them.
func runKubeBurst(ctx context.Context, opts *options, p *plane, kube kubernetes.Interface, nodeRoot string,
	mgmt func(args ...string) ([]byte, error), res *kubeRuntimeResult,
) (err error) {
	n, window := kubeBurstSize(opts)
	b := &kubeBurst{Clusters: n, WindowS: window.Seconds()}
	res.Burst = b
	for i := range n {
		name := kubeBurstName(i)
		if err := makeEtcdVolume(ctx, kube, name+"-etcd", filepath.Join(nodeRoot, "volumes", name)); err != nil {
			return err
		}
	}
	cfg, err := p.hostedKubeconfig(ctx, "mgmt")
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("client of mgmt: %w", err)
	}
	defer func() {
		// Every burst cluster goes, also after a failure part-way.
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if out, err := mgmt("destroy", "cluster", "--name", kubeBurstName(i), "--wait", "--timeout", "5m"); err != nil {
					errs[i] = fmt.Errorf("destroy cluster %s: %w\n%s", kubeBurstName(i), err, tail(out, 10))
				}
			})
		}
		wg.Wait()
		err = errors.Join(err, errors.Join(errs...))
	}()

	start := time.Now()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out, err := mgmt("create", "cluster", "none", "--name", kubeBurstName(i),
				"--api-server-publishing", "NodePort", "--api-server-address", res.NodeIP, "--etcd-storage-size", "1Gi")
			if err != nil {
				errs[i] = fmt.Errorf("create cluster %s: %w\n%s", kubeBurstName(i), err, tail(out, 10))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Printf("   burst: %d create calls took %.2fs\n", n, time.Since(start).Seconds())
	probe := startMgmtProbe(ctx, c, kubeBurstName(0))
	availableAt := map[string]float64{}
	lastPrint := time.Now()
	for len(availableAt) < n && time.Since(start) < window && ctx.Err() == nil {
		if err := markAvailable(ctx, c, start, availableAt); err != nil && ctx.Err() == nil {
			fmt.Printf("   burst: list hosted clusters: %v (retrying)\n", err)
		}
		if time.Since(lastPrint) >= 15*time.Second {
			lastPrint = time.Now()
			fmt.Printf("   burst [%4.0fs] %d/%d Available\n", time.Since(start).Seconds(), len(availableAt), n)
		}
		_ = sleep(ctx, time.Second)
	}
	b.Management = probe.stop()
	b.Available = len(availableAt)
	times := make([]float64, 0, len(availableAt))
	for _, t := range availableAt {
		times = append(times, t)
	}
	b.AvailableS = summarizeIfAny(times)
	if err := b.sampleScheduling(ctx, kube, res.Node); err != nil {
		return err
	}
	fmt.Printf("   burst: %d/%d Available within %.0fs; %d clusters with %d Pending pods (%s); node CPU requested %d of %d m, one control plane requests %d m; management API %s\n",
		b.Available, n, window.Seconds(), b.PendingClusters, b.PendingPods, b.Unschedulable,
		b.RequestedCPUMillicores, b.NodeCPUMillicores, b.ControlPlaneCPUMillicores, b.Management)
	return nil
}

// sampleScheduling records the burst's unscheduled pods and the node's CPU
// requests as the scheduler sees them.
func (b *kubeBurst) sampleScheduling(ctx context.Context, kube kubernetes.Interface, nodeName string) error {
	node, err := kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %s: %w", nodeName, err)
	}
	b.NodeCPUMillicores = node.Status.Allocatable.Cpu().MilliValue()
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	pending := map[string]bool{}
	perPlane := map[string]int64{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu := podCPURequest(pod)
		if pod.Spec.NodeName == nodeName {
			b.RequestedCPUMillicores += cpu
		}
		if !strings.HasPrefix(pod.Namespace, "clusters-kb") {
			continue
		}
		perPlane[pod.Namespace] += cpu
		if pod.Spec.NodeName != "" {
			continue
		}
		b.PendingPods++
		pending[pod.Namespace] = true
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && b.Unschedulable == "" {
				b.Unschedulable = cond.Message
			}
		}
	}
	b.PendingClusters = len(pending)
	var sums []int64
	for _, v := range perPlane {
		sums = append(sums, v)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i] < sums[j] })
	if len(sums) > 0 {
		b.ControlPlaneCPUMillicores = sums[len(sums)/2]
	}
	return nil
}

// podCPURequest is what the scheduler counts of a pod: the larger of its
// containers' sum and its largest init container.
func podCPURequest(pod *corev1.Pod) int64 {
	var sum, initMax int64
	for _, c := range pod.Spec.Containers {
		sum += c.Resources.Requests.Cpu().MilliValue()
	}
	for _, c := range pod.Spec.InitContainers {
		initMax = max(initMax, c.Resources.Requests.Cpu().MilliValue())
	}
	return max(sum, initMax)
}
