package hostedcontrolplane

import (
	"maps"
	"slices"
	"testing"
	"time"

	"hypershift.dev/internal/runtime"
)

func TestHeldTrust(t *testing.T) {
	drop := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	before, after := drop.Add(-time.Hour), drop.Add(time.Second)
	in := func(name, component string, phase runtime.Phase, started time.Time) runtime.InstanceStatus {
		return runtime.InstanceStatus{Name: name, Component: component, Phase: phase, StartedAt: started}
	}
	for _, tc := range []struct {
		name      string
		instances []runtime.InstanceStatus
		held      []string
	}{
		{
			name: "drop just made: the first etcd member restarts, the rest wait",
			instances: []runtime.InstanceStatus{
				in("etcd-0", "etcd", runtime.Running, before), in("etcd-1", "etcd", runtime.Running, before), in("etcd-2", "etcd", runtime.Running, before),
				in("kube-apiserver-0", "kube-apiserver", runtime.Running, before), in("kube-apiserver-1", "kube-apiserver", runtime.Running, before),
				in("konnectivity-server-0", "konnectivity-server", runtime.Running, before), in("konnectivity-server-1", "konnectivity-server", runtime.Running, before),
			},
			held: []string{"etcd-1", "etcd-2", "kube-apiserver-0", "kube-apiserver-1"},
		},
		{
			name: "the first restarting: the others wait",
			instances: []runtime.InstanceStatus{
				in("etcd-0", "etcd", runtime.Starting, after), in("etcd-1", "etcd", runtime.Running, before), in("etcd-2", "etcd", runtime.Running, before),
			},
			held: []string{"etcd-1", "etcd-2"},
		},
		{
			name: "the first runs again: the next is released",
			instances: []runtime.InstanceStatus{
				in("etcd-0", "etcd", runtime.Running, after), in("etcd-1", "etcd", runtime.Running, before), in("etcd-2", "etcd", runtime.Running, before),
			},
			held: []string{"etcd-2"},
		},
		{
			name: "etcd restarted: the API servers follow, one at a time",
			instances: []runtime.InstanceStatus{
				in("etcd-0", "etcd", runtime.Running, after), in("etcd-1", "etcd", runtime.Running, after), in("etcd-2", "etcd", runtime.Running, after),
				in("kube-apiserver-0", "kube-apiserver", runtime.Running, before), in("kube-apiserver-1", "kube-apiserver", runtime.Running, before),
			},
			held: []string{"kube-apiserver-1"},
		},
		{
			name: "all restarted",
			instances: []runtime.InstanceStatus{
				in("etcd-0", "etcd", runtime.Running, after), in("etcd-1", "etcd", runtime.Running, after), in("etcd-2", "etcd", runtime.Running, after),
				in("kube-apiserver-0", "kube-apiserver", runtime.Running, after), in("kube-apiserver-1", "kube-apiserver", runtime.Running, after),
			},
		},
		{
			name:      "a single replica: etcd first",
			instances: []runtime.InstanceStatus{in("etcd", "etcd", runtime.Running, before), in("kube-apiserver", "kube-apiserver", runtime.Running, before)},
			held:      []string{"kube-apiserver"},
		},
		{
			name:      "a single replica: then the API server",
			instances: []runtime.InstanceStatus{in("etcd", "etcd", runtime.Running, after), in("kube-apiserver", "kube-apiserver", runtime.Running, before)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(heldTrust(tc.instances, drop)))
			if !slices.Equal(got, tc.held) {
				t.Fatalf("held %v, want %v", got, tc.held)
			}
		})
	}
}
