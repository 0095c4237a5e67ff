// Package host is the Host platform: a pool's machines are machines of the
// management plane's host (network namespaces, docs/machines.md), made by
// Cluster API (platform/clusterapi) with the HostMachine infrastructure
// provider (internal/controller/hostmachine).
package host

import (
	"context"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
)

// Infrastructure is the HostMachine provider's part of a pool.
var Infrastructure = clusterapi.Infrastructure{
	Group:               hypershiftv1alpha1.GroupVersion.Group,
	Version:             hypershiftv1alpha1.GroupVersion.Version,
	ClusterKind:         "HostCluster",
	MachineKind:         "HostMachine",
	MachineTemplateKind: "HostMachineTemplate",
	NodeName:            clusterapi.ProviderIDNodeName(hypershiftv1alpha1.HostProviderIDPrefix),
	Capacity:            Capacity,
}

// Capacity is what a machine's Node offers: every machine shares this
// host's processors and memory (the kubelet reports the host's), and the
// kubelet's default of 110 pods.
func Capacity(*hypershiftv1alpha1.NodePool) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourceCPU:  *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourcePods: *resource.NewQuantity(110, resource.DecimalSI),
	}
	if mem, ok := memTotal(); ok {
		out[corev1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	return out
}

// memTotal is the host's memory, from /proc/meminfo.
func memTotal() (int64, bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

// New is the Host platform of the management cluster c; start runs
// Cluster API's controllers (nil: this operator runs none).
func New(c client.Client, start func(context.Context) error) *clusterapi.Platform {
	return &clusterapi.Platform{Type: hypershiftv1alpha1.HostPlatform, Client: c, Infra: Infrastructure, Start: start}
}
