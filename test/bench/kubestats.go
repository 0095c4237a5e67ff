package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// kubeUsage is what the kubelet measured of the control planes' pods, next
// to what they request.
type kubeUsage struct {
	ControlPlanes  int     `json:"control_planes"`
	MeasuredAfterS float64 `json:"measured_after_s"`
	// ByComponent is, per component (the pod's hypershift.dev/component
	// label; the API server's pod includes its Konnectivity sidecar), the
	// median over the control planes.
	ByComponent map[string]podUsage `json:"by_component"`
	// PerControlPlane is the median over the control planes of the sums of
	// their pods.
	PerControlPlane podUsage `json:"per_control_plane"`
	// OperatorWorkingSetMiB is each operator pod's working set.
	OperatorWorkingSetMiB []float64 `json:"operator_working_set_mib"`
	OperatorCPUMillicores []float64 `json:"operator_cpu_millicores"`
}

// podUsage is the kubelet's memory working set and CPU of a pod (all its
// containers), and the sum of its containers' requests.
type podUsage struct {
	WorkingSetMiB        float64 `json:"working_set_mib"`
	CPUMillicores        float64 `json:"cpu_millicores"`
	RequestMemoryMiB     float64 `json:"request_memory_mib"`
	RequestCPUMillicores float64 `json:"request_cpu_millicores"`
}

// summaryPod is the part of the kubelet's /stats/summary the bench reads.
type summaryPod struct {
	PodRef struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"podRef"`
	CPU struct {
		UsageNanoCores uint64 `json:"usageNanoCores"`
	} `json:"cpu"`
	Memory struct {
		WorkingSetBytes uint64 `json:"workingSetBytes"`
	} `json:"memory"`
}

const operatorNamespace = "hypershift"

// sampleKubeUsage reads the node's stats summary through the management
// API (the node proxy) until the kubelet has measured every pod of the
// namespaces and the operator's (at most two minutes), and sums it up.
func sampleKubeUsage(ctx context.Context, kube kubernetes.Interface, node string, namespaces []string) (*kubeUsage, error) {
	pods := map[string][]corev1.Pod{}
	want := 0
	for _, ns := range append([]string{operatorNamespace}, namespaces...) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list pods of %s: %w", ns, err)
		}
		pods[ns] = list.Items
		want += len(list.Items)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var stats map[string]summaryPod // by namespace/name
	for {
		var err error
		stats, err = readSummary(ctx, kube, node)
		missing := 0
		for ns, list := range pods {
			for _, p := range list {
				if s, ok := stats[ns+"/"+p.Name]; !ok || s.Memory.WorkingSetBytes == 0 {
					missing++
				}
			}
		}
		if err == nil && missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("the kubelet of %s measured %d of %d pods after two minutes: %w", node, want-missing, want, err)
			}
			return nil, fmt.Errorf("the kubelet of %s measured %d of %d pods after two minutes", node, want-missing, want)
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return nil, fmt.Errorf("interrupted while reading the stats summary of %s", node)
		}
	}

	u := &kubeUsage{ControlPlanes: len(namespaces), ByComponent: map[string]podUsage{}}
	for _, p := range pods[operatorNamespace] {
		s := stats[operatorNamespace+"/"+p.Name]
		u.OperatorWorkingSetMiB = append(u.OperatorWorkingSetMiB, round1(float64(s.Memory.WorkingSetBytes)/(1<<20)))
		u.OperatorCPUMillicores = append(u.OperatorCPUMillicores, round1(float64(s.CPU.UsageNanoCores)/1e6))
	}
	byComponent := map[string][]podUsage{}
	var sums []podUsage
	for _, ns := range namespaces {
		var sum podUsage
		for _, p := range pods[ns] {
			pu := usageOf(p, stats[ns+"/"+p.Name])
			c := p.Labels["hypershift.dev/component"]
			byComponent[c] = append(byComponent[c], pu)
			sum.add(pu)
		}
		sums = append(sums, sum)
	}
	for c, us := range byComponent {
		u.ByComponent[c] = medianUsage(us)
	}
	u.PerControlPlane = medianUsage(sums)
	return u, nil
}

func readSummary(ctx context.Context, kube kubernetes.Interface, node string) (map[string]summaryPod, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + node + "/proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats summary of node %s: %w", node, err)
	}
	var summary struct {
		Pods []summaryPod `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		return nil, fmt.Errorf("decode the stats summary of node %s: %w", node, err)
	}
	out := map[string]summaryPod{}
	for _, p := range summary.Pods {
		out[p.PodRef.Namespace+"/"+p.PodRef.Name] = p
	}
	return out, nil
}

func usageOf(p corev1.Pod, s summaryPod) podUsage {
	u := podUsage{
		WorkingSetMiB: float64(s.Memory.WorkingSetBytes) / (1 << 20),
		CPUMillicores: float64(s.CPU.UsageNanoCores) / 1e6,
	}
	for _, c := range p.Spec.Containers {
		u.RequestCPUMillicores += float64(c.Resources.Requests.Cpu().MilliValue())
		u.RequestMemoryMiB += float64(c.Resources.Requests.Memory().Value()) / (1 << 20)
	}
	return u
}

func (u *podUsage) add(o podUsage) {
	u.WorkingSetMiB += o.WorkingSetMiB
	u.CPUMillicores += o.CPUMillicores
	u.RequestMemoryMiB += o.RequestMemoryMiB
	u.RequestCPUMillicores += o.RequestCPUMillicores
}

// medianUsage is the median of each figure on its own.
func medianUsage(us []podUsage) podUsage {
	pick := func(f func(podUsage) float64) float64 {
		xs := make([]float64, len(us))
		for i, u := range us {
			xs[i] = f(u)
		}
		return round1(median(xs))
	}
	return podUsage{
		WorkingSetMiB:        pick(func(u podUsage) float64 { return u.WorkingSetMiB }),
		CPUMillicores:        pick(func(u podUsage) float64 { return u.CPUMillicores }),
		RequestMemoryMiB:     pick(func(u podUsage) float64 { return u.RequestMemoryMiB }),
		RequestCPUMillicores: pick(func(u podUsage) float64 { return u.RequestCPUMillicores }),
	}
}
