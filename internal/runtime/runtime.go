// Package runtime defines how rendered control-plane components are run:
// the workload description every runtime takes (Spec: command line, files,
// ports, probe, stop order), what a runtime offers the instances it runs
// (Layout: their directory and how they reach each other), and what it
// reports (InstanceStatus). The process runtime (runtime/process) runs specs
// as supervised local OS processes; the kube runtime (runtime/kube) runs the
// same specs as pods of a management cluster.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
)

// ControlPlaneRef names one control plane: its namespace (NS-NAME for a
// hosted cluster) and name, and the UID of the object that owns it.
type ControlPlaneRef struct {
	Namespace string
	Name      string
	// Owner is the UID of the owning object (a HostedControlPlane, a
	// NodePool). A runtime keeps a control plane's data keyed by Namespace,
	// which different owners can share; it refuses to run or delete one
	// whose data another owner made. Empty for the runtime's own fixed
	// control planes (management plane, node), which have no owner object.
	Owner string
}

// ErrNotOwner is wrapped by the error of Ports, Apply and Delete for a ref
// whose data another owner holds: nothing of it is used, stopped or removed.
var ErrNotOwner = errors.New("control plane belongs to another owner")

// ErrStopping is wrapped by the error of Delete while the control plane's
// instances are still stopping: everything is deleted, and Delete is to
// be called again shortly (the runtime bounds how long it says so).
var ErrStopping = errors.New("control plane still stopping")

// Runtime runs the components of control planes. Every runtime implements
// every method; what it can do beyond running specs is stated once, by
// Capabilities, and callers ask that rather than the runtime's type.
type Runtime interface {
	// Capabilities states what the runtime can do.
	Capabilities() Capabilities
	// Layout says where a control plane's instances find their files and
	// how they reach each other; the renderer renders for it.
	Layout(ref ControlPlaneRef) Layout
	// Ports returns the named ports of a control plane, allocating each
	// once and keeping it. want names each port with its upstream default
	// (0: none): a runtime whose instances have a network of their own
	// (pods) gives each port its default and refuses one without; a runtime
	// of one host allocates free ports and ignores the defaults.
	Ports(ctx context.Context, ref ControlPlaneRef, want map[string]int) (map[string]int, error)
	// Apply makes the running instances of a control plane match specs:
	// it starts missing ones, restarts changed ones and stops others.
	Apply(ctx context.Context, ref ControlPlaneRef, specs []Spec) error
	// Status reports each instance of a control plane, sorted by name.
	Status(ref ControlPlaneRef) []InstanceStatus
	// Running reports whether an instance of a control plane runs or is
	// starting, also before its first Apply: processes an earlier operator
	// started, which that Apply adopts (Status knows only what was
	// applied).
	Running(ref ControlPlaneRef) bool
	// Published returns where clients outside the control plane reach the
	// published port named name (Spec.Publish.Name); ok is false
	// while that is not known yet (a node port not allocated yet).
	Published(ctx context.Context, ref ControlPlaneRef, port string) (host string, hostPort int, ok bool, err error)
	// Delete stops a control plane and removes its data; an error wrapping
	// ErrStopping: all is removed but an instance still stops.
	Delete(ctx context.Context, ref ControlPlaneRef) error

	// Sleep stops every instance of a control plane in place, keeping its
	// data and what the runtime publishes for it; the next Apply runs them
	// again. Only for Capabilities().InPlace: other runtimes sleep by an
	// Apply of fewer specs and return ErrNotInPlace.
	Sleep(ctx context.Context, ref ControlPlaneRef) error
	// Fence applies specs with every writer of etcd stopped, in place, and
	// returns the writers still left, each named for the status; the next
	// Apply starts them again. Only for Capabilities().InPlace, as Sleep.
	Fence(ctx context.Context, ref ControlPlaneRef, specs []Spec) ([]string, error)

	// PinPorts tells the runtime the published ports of a control plane
	// before it allocates any: a restored cluster keeps the endpoint its
	// saved kubeconfigs name. It reports false when the control plane has
	// ports already.
	PinPorts(ref ControlPlaneRef, ports map[string]int) (bool, error)
	// UnpinPorts takes back the pin of a control plane that never started
	// (its cluster was deleted before it ran), removing only what PinPorts
	// wrote.
	UnpinPorts(ref ControlPlaneRef) error
}

// Capabilities are what a runtime can do beyond running specs. Each
// runtime's value is stated once, below (Process, Kube), and returned by
// its Capabilities method; the controllers' validation and the operator's
// admission policy derive from it.
type Capabilities struct {
	// Name is how users know the runtime, for messages: "process", "kube".
	Name string
	// Pods: control planes run as pods of a management cluster (their
	// Layout's Pods); otherwise as processes of this host.
	Pods bool
	// InPlace: Sleep and Fence stop instances and keep what the runtime
	// publishes for them, which an Apply of fewer specs would delete and
	// the next Apply make again (the kube runtime's Services and their
	// node ports). Without it, hibernation and the fence are an Apply of
	// fewer specs.
	InPlace bool
	// Publishing are the service publishing strategies it offers, by the
	// API's names (HostPort, NodePort, LoadBalancer).
	Publishing []string
	// Volumes: it keeps etcd's data on claims of a storage class
	// (spec.etcd.managed.storage); otherwise in the operator's data dir.
	Volumes bool
	// OneProcess: it can run a control plane as a single process (the
	// single-process annotation).
	OneProcess bool
	// WakeOnRequest: an endpoint proxy of this host holds a request to a
	// hibernated control plane while it starts (spec.hibernation.idleAfter).
	WakeOnRequest bool
	// HostFiles: the operator and the instances read and write this host's
	// files: a file:// archive is a path here (otherwise it would name a
	// path in a pod), and a release server instance serves this host's
	// release binaries to nodes.
	HostFiles bool
	// RollsComponents: the runtime replaces a component's instances one at
	// a time itself (a workload's rollout), so a version rollout moves
	// whole components and a trust change needs no restart order;
	// otherwise the controller moves and restarts one instance at a time.
	RollsComponents bool
	// LoopbackWebhooks: an instance beside the API server serves it
	// admission webhooks on loopback (the workload-identity webhook,
	// spec.workloadIdentityWebhook).
	LoopbackWebhooks bool
	// AttachesVolumes: the machines of Host clusters are pods of the
	// management cluster, to which volumes of its storage are attached
	// (spec.platform.host.storageDriver, docs/volumes.md).
	AttachesVolumes bool
}

// Named is want for Runtime.Ports of ports that have no upstream default
// (only a runtime of one host can give them a number).
func Named(names ...string) map[string]int {
	want := make(map[string]int, len(names))
	for _, n := range names {
		want[n] = 0
	}
	return want
}

// PublishesOn reports whether strategy is among c.Publishing.
func (c Capabilities) PublishesOn(strategy string) bool {
	return slices.Contains(c.Publishing, strategy)
}

var (
	// Process is the process runtime's (internal/runtime/process):
	// processes of the operator's host, which publish on its ports.
	Process = Capabilities{
		Name: "process", Publishing: []string{"HostPort"},
		OneProcess: true, WakeOnRequest: true, HostFiles: true, LoopbackWebhooks: true,
	}
	// Kube is the kube runtime's (internal/runtime/kube): pods of the
	// management cluster, published by Services, etcd on claims, asleep
	// and fenced in place.
	Kube = Capabilities{
		Name: "kube", Pods: true, InPlace: true, RollsComponents: true,
		Publishing: []string{"NodePort", "LoadBalancer"}, Volumes: true, AttachesVolumes: true,
	}
)

// ErrNotInPlace is returned by Sleep and Fence of a runtime without
// Capabilities().InPlace.
var ErrNotInPlace = errors.New("this runtime stops instances by an Apply of fewer specs, not in place")

// Layout is what a runtime offers the instances of one control plane.
type Layout struct {
	// Dir holds one directory per instance (Dir/<instance name>), as the
	// instances see it: every path in a Spec's arguments lies under it.
	Dir string
	// Pods: each instance runs in a network namespace of its own (a pod),
	// listens on all of that namespace's addresses, and is reached by the
	// others at Host(instance). Otherwise all instances share the host's
	// network: they listen on loopback, on ports the runtime allocated, and
	// Host is nil.
	Pods bool
	// Host returns the name other instances reach a component at (instance
	// empty: any of its instances, load-balanced) or one instance of it
	// (etcd's members, each by its own name); set when Pods.
	Host func(component, instance string) string
	// Self and SelfIP, when set, are what an instance's own name and IP
	// address are written as in its arguments, expanded where it runs
	// ("$(POD_NAME)"): instances of one component then have equal specs
	// apart from their Name, and run as replicas of one workload.
	Self, SelfIP string
}

// Phase is an instance's state.
type Phase string

// Phases.
const (
	// Starting: started, not ready yet.
	Starting Phase = "Starting"
	// Running: running and passing its readiness probe.
	Running Phase = "Running"
	// Unhealthy: running, but its probe fails.
	Unhealthy Phase = "Unhealthy"
	// BackOff: exited, waiting to be started again.
	BackOff Phase = "BackOff"
	// Stopped: not running.
	Stopped Phase = "Stopped"
)

// InstanceStatus is what a runtime observes of one instance.
type InstanceStatus struct {
	// Name of the instance (Spec.Name) and the Component it runs.
	Name, Component string
	Phase           Phase
	// PID of the process, for runtimes that run processes; 0 otherwise.
	PID int
	// Restarts counts how often the instance was started again.
	Restarts int
	// LastExitReason says why the instance last exited.
	LastExitReason string
	// Message adds detail, such as a failing probe's error.
	Message string
	// StartedAt is when the current process or container started; zero
	// when unknown.
	StartedAt time.Time
	// Version is the Spec.Version the running instance was started from
	// ("": the compiled-in release; release.Normalize names it).
	Version string
}

// LastLines is the last n lines of a log's text, without its trailing
// newlines: what both runtimes report of a component that exited. A
// structured (JSON) line, as etcd writes, is told as its level, message and
// error — "fatal: failed to list data directory: open …: permission
// denied" — without its stack trace and other fields, which would push the
// cause out of a message cut to its end.
func LastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, line := range lines {
		lines[i] = condensed(line)
	}
	return strings.Join(lines, "\n")
}

// condensed is a JSON log line's level, message and error, or line itself
// when it is not one.
func condensed(line string) string {
	trimmed := strings.TrimSpace(line)
	if !strings.HasPrefix(trimmed, "{") {
		return line
	}
	var e struct {
		Level string `json:"level"`
		Msg   string `json:"msg"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(trimmed), &e) != nil || e.Msg == "" {
		return line
	}
	out := e.Msg
	if e.Level != "" {
		out = e.Level + ": " + out
	}
	if e.Error != "" {
		out += ": " + e.Error
	}
	return out
}
