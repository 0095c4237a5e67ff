// Package kube runs control-plane components as pods of a management
// cluster: each Component becomes a Deployment (or a StatefulSet when it
// keeps data), with its files in a Secret, Services, a PodDisruptionBudget
// and a NetworkPolicy, all in the control plane's namespace and labelled
// with the UID of the object that owns them. Objects renders them (a pure
// function); Runtime applies them and reports from the pods.
package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// FieldOwner is the field manager of everything Apply writes.
const FieldOwner = "hypershift-kube-runtime"

// Dir is where every container of a control plane's pods finds its files
// (a shared emptyDir), one directory per Component.
const Dir = "/var/lib/hypershift"

// Defaults of Options.
const (
	DefaultPriorityClassName = "hypershift-control-plane"
	DefaultOperatorNamespace = "hypershift"
)

// DefaultEtcdStorageSize is the size of each etcd member's volume.
var DefaultEtcdStorageSize = resource.MustParse("8Gi")

// Options configure the kube runtime.
type Options struct {
	// Image runs every container (`/hypershift component NAME`); required.
	Image string
	// MachineImage runs the machines of Host NodePools (Machines); empty:
	// the operator makes none.
	MachineImage string
	// MaxMachines bounds the machine pods of the cluster, any control
	// plane's; zero: no bound.
	MaxMachines int
	// KubeletDir is the kubelet's root directory on the cluster's nodes,
	// where machines have their hot-plug directories (MachinesOptions);
	// empty: machines get none and volumes are not attached.
	KubeletDir string
	// StorageClassName of the etcd volumes; empty: the cluster's default.
	StorageClassName string
	// EtcdStorageSize of each etcd member's volume; zero: 8Gi.
	EtcdStorageSize resource.Quantity
	// PriorityClassName of the control plane's pods; empty:
	// hypershift-control-plane.
	PriorityClassName string
	// Namespace of the operator, whose pods may reach the API servers;
	// empty: hypershift.
	Namespace string
	// APIReader reads from the API server, not a cache (the manager's
	// GetAPIReader()); nil: the client. The ownership checks of Apply and
	// the listing of Delete use it: a cache may not hold an object made a
	// moment ago, nor, when it selects by label, a foreign one at all.
	APIReader client.Reader
}

func (o Options) withDefaults() (Options, error) {
	if o.Image == "" {
		return o, fmt.Errorf("kube runtime: Options.Image is empty: name the hypershift image the management cluster's nodes run (hypershift image save)")
	}
	if o.EtcdStorageSize.IsZero() {
		o.EtcdStorageSize = DefaultEtcdStorageSize
	}
	if o.PriorityClassName == "" {
		o.PriorityClassName = DefaultPriorityClassName
	}
	if o.Namespace == "" {
		o.Namespace = DefaultOperatorNamespace
	}
	return o, nil
}

// Runtime is the kube runtime. Its client should read from the manager's
// cache: Status and Published read pods and Services often.
type Runtime struct {
	client client.Client
	// reader reads past the cache, for decisions about objects that may
	// not be the runtime's; nil when the client reads the API server
	// itself.
	reader client.Reader
	opts   Options

	mu sync.Mutex
	// applied is what the last Apply of each control plane ran, for Status
	// and Published.
	applied map[runtime.ControlPlaneRef][]*workload
	// deleting is when Delete was first called for each control plane
	// whose pods it waits for (podsLeft); now is the clock.
	deleting map[runtime.ControlPlaneRef]time.Time
	now      func() time.Time
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a kube runtime that works through c.
func New(c client.Client, opts Options) *Runtime {
	return &Runtime{
		client: c, reader: opts.APIReader, opts: opts, applied: map[runtime.ControlPlaneRef][]*workload{},
		deleting: map[runtime.ControlPlaneRef]time.Time{}, now: time.Now,
	}
}

// Capabilities implements runtime.Runtime: runtime.Kube.
func (*Runtime) Capabilities() runtime.Capabilities { return runtime.Kube }

// Running implements runtime.Runtime: an instance applied is not Stopped.
// Pods outlive an operator, and the next one's first Apply finds their
// workloads as they are.
func (r *Runtime) Running(ref runtime.ControlPlaneRef) bool {
	for _, in := range r.Status(ref) {
		if in.Phase != runtime.Stopped {
			return true
		}
	}
	return false
}

// UnpinPorts implements runtime.Runtime: the pin is an annotation of the
// control plane's namespace, which goes with it; nothing else to take back.
func (*Runtime) UnpinPorts(runtime.ControlPlaneRef) error { return nil }

// Layout implements runtime.Runtime: every instance is a pod with its own
// network, reached through Services, its files under Dir/<Component>.
func (r *Runtime) Layout(ref runtime.ControlPlaneRef) runtime.Layout {
	return runtime.Layout{
		Dir:  Dir,
		Pods: true,
		Host: func(component, instance string) string {
			if instance == "" {
				return fmt.Sprintf("%s.%s.svc", component, ref.Namespace)
			}
			return fmt.Sprintf("%s.%s.%s.svc", instance, discoveryServiceName(component), ref.Namespace)
		},
		Self:   "$(POD_NAME)",
		SelfIP: "$(POD_IP)",
	}
}

// ServiceDNSNames are the names a component's Service answers to inside the
// management cluster, for its serving certificate.
func ServiceDNSNames(namespace, component string) []string {
	return []string{component, component + "." + namespace, component + "." + namespace + ".svc"}
}

// MemberDNSName is the wildcard name of the members of a component with
// data (etcd), each reached through the headless discovery Service.
func MemberDNSName(namespace, component string) string {
	return "*." + discoveryServiceName(component) + "." + namespace + ".svc"
}

func discoveryServiceName(component string) string { return component + "-discovery" }

// Ports implements runtime.Runtime: pods have their own network, so every
// port is its upstream default.
func (r *Runtime) Ports(_ context.Context, _ runtime.ControlPlaneRef, want map[string]int) (map[string]int, error) {
	ports := make(map[string]int, len(want))
	for name, p := range want {
		if p == 0 {
			return nil, fmt.Errorf("port %q has no upstream default: the kube runtime gives every port its upstream default", name)
		}
		ports[name] = p
	}
	return ports, nil
}
