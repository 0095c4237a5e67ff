// Package platform is the seam between the NodePool controller and where a
// pool's machines come from. Each platform lives in its own package beside
// this one (none, simulated, unsupported), as kwok keeps its runtimes side
// by side; the controller picks one by spec.platform.type and then talks to
// it only through Platform — it never asks which platform it has.
package platform

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/version"
)

// Platform provides a pool's machines.
type Platform interface {
	// Validate says why the platform cannot run the pool, or nil.
	Validate(p *Pool) error
	// NeedsToken: the controller keeps a bootstrap token for the pool
	// while it has or wants machines, because the platform's machines join
	// with it. Otherwise nodes join with tokens `hypershift create
	// join-command` makes.
	NeedsToken() bool
	// NamesMachines: the platform names the pool's machines, so only those
	// names may join the pool (Machines lists them).
	NamesMachines() bool
	// SupportsAutoscaling: the platform adds and removes machines, so
	// spec.autoScaling can size the pool.
	SupportsAutoscaling() bool
	// SupportsAutorepair: the platform replaces unhealthy machines when
	// spec.management.autoRepair is set.
	SupportsAutorepair() bool
	// UpgradesNodes: Reconcile moves the pool's nodes to Pool.Version the
	// way spec.management.upgradeType says (platform None: InPlace pools
	// only).
	UpgradesNodes(np *hypershiftv1alpha1.NodePool) bool
	// UnsetReplicas is the pool's size when it sets neither replicas nor
	// autoScaling.
	UnsetReplicas(p *Pool) int32
	// Machines names the pool's machines (needs p.Cluster).
	Machines(p *Pool) ([]string, error)
	// NodeTemplate is what a new node of the pool looks like, for the
	// autoscaler: its labels and capacity.
	NodeTemplate(np *hypershiftv1alpha1.NodePool) NodeTemplate
	// Reconcile makes the pool have want machines: it adds machines, and
	// drains then removes surplus ones.
	Reconcile(ctx context.Context, p *Pool, want int32) (Report, error)
	// Cleanup removes what the platform keeps in the hosted cluster for
	// the pool, once it has no machines left.
	Cleanup(ctx context.Context, p *Pool) error
	// Delete removes what the platform runs for the pool outside the
	// hosted cluster (agents); it works without a hosted cluster.
	Delete(ctx context.Context, p *Pool) error
	// Sleep lets the pool's machines sleep with their cluster's control
	// plane (docs/hibernation.md): it stops what the platform runs for them
	// and keeps what they need to come back; the next Reconcile once the
	// cluster is Available again starts them. Real nodes do nothing: their
	// kubelets keep running and register again when the API answers.
	Sleep(ctx context.Context, p *Pool) error
}

// Pool is what a platform is told about one reconcile of a NodePool.
type Pool struct {
	NodePool      *hypershiftv1alpha1.NodePool
	HostedCluster *hypershiftv1alpha1.HostedCluster
	Log           logr.Logger
	// Cluster reaches the hosted cluster; nil when it is not connected.
	Cluster *Cluster
	// Nodes are the Nodes bound to the pool, by name.
	Nodes map[string]*corev1.Node
	// Deleting: the pool is being deleted (no autorepair).
	Deleting bool
	// Server and CAPEM reach the hosted API server; Token is the pool's
	// current bootstrap token (set when NeedsToken).
	Server string
	CAPEM  []byte
	Token  bootstrap.Token
	// RequeueBy asks for the next reconcile within d; may be nil.
	RequeueBy func(d time.Duration)
	// Version is the kubelet version the pool's nodes are to run.
	// VersionHeld: the pool's spec.kubernetesVersion cannot be rolled out
	// (see the UpdatingVersion condition), so existing nodes keep the
	// version they run and only new machines get Version.
	Version     string
	VersionHeld bool
}

// Requeue asks for the next reconcile within d.
func (p *Pool) Requeue(d time.Duration) {
	if p.RequeueBy != nil {
		p.RequeueBy(d)
	}
}

// Cluster is the controller's connection to a hosted cluster, as
// platforms see it.
type Cluster struct {
	Kube kubernetes.Interface
	// Nodes caches every Node of the cluster.
	Nodes corev1listers.NodeLister
	// ConfigMaps caches the pools' ConfigMaps in kube-system.
	ConfigMaps corev1listers.ConfigMapNamespaceLister
	// Ensured records what was ensured over this connection (e.g. RBAC,
	// by pool name), so it is done once per connection.
	Ensured *sync.Map
}

// Report is a platform's account of a pool's machines.
type Report struct {
	// Machines is how many machines exist.
	Machines int32
	// Unregistered names machines whose node has not registered yet.
	Unregistered []string
	// Draining names nodes being drained for removal; Blocked counts the
	// evictions a PodDisruptionBudget refused.
	Draining []string
	Blocked  int
	// Problem says why machines cannot run (an agent that does not run);
	// empty when none.
	Problem string
	// Busy: machines are being added, drained or removed.
	Busy bool
	// Rollout says what a version rollout is doing; empty when none runs.
	Rollout string
	// MachineStatus is what the machines say of their readiness and
	// versions, from platforms whose machines report them (Cluster API's
	// Machines); nil: the controller reads both from the pool's Nodes.
	MachineStatus *MachineStatus
}

// MachineStatus is what a pool's machines report of themselves. Machines
// being deleted count only in Versions.
type MachineStatus struct {
	// Ready counts the machines that are ready: the platform says so,
	// they are not being deleted and their Node is bound to the pool and
	// Ready.
	Ready int32
	// Registered counts the machines, not being deleted, whose Node has
	// registered; NotReady names those of them that are not ready, and
	// Unhealthy their Nodes that are not healthy; both sorted.
	Registered int32
	NotReady   []string
	Unhealthy  []string
	// Versions are the kubelet versions the machines' Nodes run, distinct
	// and sorted: at most MaxVersions, each at most MaxVersionLength
	// bytes (they are node-reported); OtherVersions counts the distinct
	// versions left out.
	Versions      []string
	OtherVersions int
	// Machines are the machines as their provider reports them, bounded
	// (the NodePool's status.machines).
	Machines []hypershiftv1alpha1.NodePoolMachine
}

// Bounds of the kubelet versions a MachineStatus reports.
const (
	MaxVersions      = 5
	MaxVersionLength = 64
)

// KubeletVersions bounds the kubelet versions a pool's machines report,
// for status: each is cut to MaxVersionLength bytes, a byte that no
// version has (anything but letters, digits and ".+-_") becomes "?", and
// of the distinct ones, sorted, MaxVersions are kept; others counts the
// rest. Empty ones are skipped.
func KubeletVersions(reported []string) (versions []string, others int) {
	seen := map[string]bool{}
	for _, v := range reported {
		if v == "" {
			continue
		}
		seen[boundedVersion(v)] = true
	}
	versions = slices.Sorted(maps.Keys(seen))
	if len(versions) > MaxVersions {
		return versions[:MaxVersions], len(versions) - MaxVersions
	}
	return versions, 0
}

func boundedVersion(v string) string {
	const ellipsis = "…"
	cut := ""
	if len(v) > MaxVersionLength {
		v, cut = v[:MaxVersionLength-len(ellipsis)], ellipsis
	}
	b := []byte(v)
	for i, c := range b {
		if !versionByte(c) {
			b[i] = '?'
		}
	}
	return string(b) + cut
}

// versionByte: a byte a Kubernetes version string may have.
func versionByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte(".+-_", c) >= 0
}

// NodeTemplate describes a new node of a pool.
type NodeTemplate struct {
	Labels   map[string]string
	Taints   []corev1.Taint
	Capacity corev1.ResourceList
}

// Taints converts a pool's taints to Node taints.
func Taints(in []hypershiftv1alpha1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range in {
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}

// ControlPlaneVersion is the version the control plane runs: the one
// fully rolled out, else the one asked for, else the compiled-in one.
func ControlPlaneVersion(hc *hypershiftv1alpha1.HostedCluster) string {
	switch {
	case hc.Status.Version != "":
		return hc.Status.Version
	case hc.Spec.KubernetesVersion != "":
		return hc.Spec.KubernetesVersion
	default:
		return version.KubernetesVersion
	}
}
