// Package simulated is the Simulated platform: a pool's machines are
// nodes of one node agent process (internal/nodes/simulated) that the
// platform runs through a runtime. Its machine list is a ConfigMap in the
// hosted cluster that the agent watches (simagent.Config): adding a machine
// starts a node, removing it stops the node — the agent is never restarted
// for scaling.
package simulated

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/nodes/drain"
	simagent "hypershift.dev/internal/nodes/simulated"
	"hypershift.dev/internal/runtime"
)

// Platform runs pools' machines as nodes of simulated agents.
type Platform struct {
	// Runtime runs the agents; nil: this operator runs none, and
	// Simulated pools fail validation.
	Runtime runtime.Runtime
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

var _ platform.Platform = (*Platform)(nil)

func (p *Platform) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// NeedsToken is true: the agent joins its nodes with the pool's token.
func (*Platform) NeedsToken() bool { return true }

// NamesMachines is true: machines are named <pool>-<5 random characters>.
func (*Platform) NamesMachines() bool { return true }

// SupportsAutoscaling is true.
func (*Platform) SupportsAutoscaling() bool { return true }

// SupportsAutorepair is true.
func (*Platform) SupportsAutorepair() bool { return true }

// UpgradesNodes is true: Replace and InPlace rollouts (rollout.go).
func (*Platform) UpgradesNodes(*hypershiftv1alpha1.NodePool) bool { return true }

// UnsetReplicas is zero: a pool without a count has no machines.
func (*Platform) UnsetReplicas(*platform.Pool) int32 { return 0 }

// Machines names the machines in the pool's machine list.
func (*Platform) Machines(p *platform.Pool) ([]string, error) {
	cfg, _, err := config(p)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(cfg.Machines))
	for _, m := range cfg.Machines {
		out = append(out, m.Name)
	}
	return out, nil
}

// NodeTemplate is the labels every node of the pool has, its taints, and
// the capacity the agent reports.
func (*Platform) NodeTemplate(np *hypershiftv1alpha1.NodePool) platform.NodeTemplate {
	labels := map[string]string{
		hypershiftv1alpha1.NodePoolLabel: np.Name,
		bootstrap.BindingLabel:           np.Name,
		corev1.LabelOSStable:             "linux",
		corev1.LabelArchStable:           "amd64",
		corev1.LabelInstanceTypeStable:   simagent.InstanceType,
		simagent.SimulatedLabel:          "true",
	}
	for k, v := range np.Spec.NodeLabels {
		labels[k] = v
	}
	return platform.NodeTemplate{Labels: labels, Taints: platform.Taints(np.Spec.Taints), Capacity: simagent.DefaultCapacity()}
}

// Validate needs a runtime for the agent.
func (p *Platform) Validate(*platform.Pool) error {
	if p.Runtime == nil {
		return errors.New("this operator runs no node agents (it was started without a node runtime), so Simulated NodePools cannot run")
	}
	return nil
}

// config reads the pool's machine list.
func config(p *platform.Pool) (simagent.Config, *corev1.ConfigMap, error) {
	cm, err := p.Cluster.ConfigMaps.Get(simagent.ConfigMapName(p.NodePool.Name))
	if apierrors.IsNotFound(err) {
		return simagent.Config{}, nil, nil
	}
	if err != nil {
		return simagent.Config{}, nil, err
	}
	cfg, err := simagent.DecodeConfig(cm)
	return cfg, cm, err
}

// Reconcile adds machines, replaces unhealthy ones (autorepair), drains
// and removes surplus ones, writes the machine list and runs the agent.
func (p *Platform) Reconcile(ctx context.Context, s *platform.Pool, want int32) (platform.Report, error) {
	var report platform.Report
	cfg, cm, err := config(s)
	if err != nil {
		return report, err
	}
	now := p.now()
	removed := p.repair(s, cfg.Machines, now)
	machines := withVersions(without(cfg.Machines, removed), cfg.KubeletVersion, s.Version)
	step, err := p.planRollout(s, machines, int(want))
	if err != nil {
		return report, err
	}
	for range step.add {
		m, err := p.newMachine(s, machines, now)
		if err != nil {
			return report, err
		}
		m.KubeletVersion = s.Version
		machines = append(machines, m)
	}
	victims, isVictim := victimsOf(machines, s.Nodes, step)
	if err := p.rollInPlace(ctx, s, machines, &step, isVictim, now, &report); err != nil {
		return report, err
	}
	drained, err := p.scaleDown(ctx, s, machines, victims, step.inPlace, now, &report)
	if err != nil {
		return report, err
	}
	for _, name := range drained {
		removed[name] = true
	}
	machines = without(machines, removed)
	surge := reportRollout(s, step, machines, int(want), &report)

	cfg.Machines = machines
	cfg.Labels = s.NodePool.Spec.NodeLabels
	cfg.Taints = platform.Taints(s.NodePool.Spec.Taints)
	if s.Version != "" {
		cfg.KubeletVersion = s.Version
	}
	if err := writeConfig(ctx, s.Cluster.Kube, s.NodePool.Name, cfg, cm); err != nil {
		return report, err
	}
	// The agent stops a node when its machine leaves the list; only then is
	// the Node deleted, so it is not registered again.
	for name := range removed {
		if err := s.Cluster.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return report, fmt.Errorf("delete node %s: %w", name, err)
		}
		s.Log.Info("machine removed", "machine", name)
	}

	report.Machines = int32(len(machines) - surge) //nolint:gosec // machine counts fit in int32
	for _, m := range machines {
		if s.Nodes[m.Name] == nil {
			report.Unregistered = append(report.Unregistered, m.Name)
		}
	}
	report.Busy = report.Busy || len(removed) > 0 || len(report.Unregistered) > 0 || report.Machines != want
	if report.Problem, err = p.ensureAgent(ctx, s); err != nil {
		return report, err
	}
	return report, nil
}

// repair picks the machines autorepair replaces.
func (p *Platform) repair(s *platform.Pool, machines []simagent.Machine, now time.Time) map[string]bool {
	removed := map[string]bool{}
	if !s.NodePool.Spec.Management.AutoRepair || s.Deleting {
		return removed
	}
	bad, next := unhealthy(machines, s.Nodes, now)
	for _, name := range bad {
		s.Log.Info("autorepair: replacing unhealthy machine", "machine", name)
		removed[name] = true
	}
	if !next.IsZero() {
		s.Requeue(next.Sub(now))
	}
	return removed
}

// scaleDown drains the victims (the machines beyond the pool's size, in
// scaleDownOrder, and old machines a Replace rollout removes), uncordons
// draining nodes that no longer have to go — unless an InPlace pool's
// rollout decides that (rollInPlace) — and returns the machines that can
// be removed now.
func (p *Platform) scaleDown(ctx context.Context, s *platform.Pool, machines, victims []simagent.Machine, inPlace bool, now time.Time, report *platform.Report) ([]string, error) {
	isVictim := map[string]bool{}
	for _, m := range victims {
		isVictim[m.Name] = true
	}
	inList := map[string]bool{}
	for _, m := range machines {
		inList[m.Name] = true
	}
	for name, node := range s.Nodes {
		if !inPlace && drain.Draining(node) && !isVictim[name] && inList[name] {
			if err := drain.Uncordon(ctx, s.Cluster.Kube, node); err != nil {
				return nil, err
			}
		}
	}
	timeout := drainTimeout(s)
	var done []string
	for _, m := range victims {
		node := s.Nodes[m.Name]
		if node == nil {
			done = append(done, m.Name)
			continue
		}
		res, err := drain.Node(ctx, s.Cluster.Kube, node, timeout, now)
		if err != nil {
			return nil, err
		}
		switch {
		case res.TimedOut:
			s.Log.Info("drain timed out, removing the node anyway", "node", m.Name, "podsLeft", res.Remaining, "nodeDrainTimeout", timeout.String())
			done = append(done, m.Name)
		case res.Done:
			done = append(done, m.Name)
		default:
			report.Draining = append(report.Draining, m.Name)
			report.Blocked += res.Blocked
			report.Busy = true
		}
	}
	return done, nil
}

// victimsOf picks the machines to drain and remove: those beyond the
// step's limit, in scaleDownOrder, and the old ones a Replace rollout
// replaces.
func victimsOf(machines []simagent.Machine, nodes map[string]*corev1.Node, step rolloutStep) ([]simagent.Machine, map[string]bool) {
	surplus := max(len(machines)-step.limit, 0)
	victims := scaleDownOrder(machines, nodes)[:surplus]
	isVictim := map[string]bool{}
	for _, m := range victims {
		isVictim[m.Name] = true
	}
	for _, m := range machines {
		if step.replace[m.Name] && !isVictim[m.Name] {
			victims = append(victims, m)
			isVictim[m.Name] = true
		}
	}
	return victims, isVictim
}

func without(machines []simagent.Machine, removed map[string]bool) []simagent.Machine {
	out := machines[:0:0]
	for _, m := range machines {
		if !removed[m.Name] {
			out = append(out, m)
		}
	}
	return out
}

// writeConfig creates or updates the pool's ConfigMap when it changed.
func writeConfig(ctx context.Context, kube kubernetes.Interface, pool string, cfg simagent.Config, existing *corev1.ConfigMap) error {
	want, err := cfg.ConfigMap(pool)
	if err != nil {
		return err
	}
	api := kube.CoreV1().ConfigMaps(metav1.NamespaceSystem)
	if existing == nil {
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create machine list %s: %w", want.Name, err)
		}
		return nil
	}
	if existing.Data[simagent.ConfigKey] == want.Data[simagent.ConfigKey] {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Data = want.Data
	if _, err := api.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update machine list %s: %w", want.Name, err)
	}
	return nil
}

// Simulated node addresses come from 100.64.0.0/10 (shared address space),
// which no real network of these nodes uses.
var nodeAddressRange = netip.MustParsePrefix("100.64.0.0/10")

// newMachine names a new machine <pool>-<5 random characters> and gives its
// node an address no other node or machine of the cluster has.
func (p *Platform) newMachine(s *platform.Pool, machines []simagent.Machine, now time.Time) (simagent.Machine, error) {
	used := map[string]bool{}
	names := map[string]bool{}
	for _, m := range machines {
		used[m.Address], names[m.Name] = true, true
	}
	if all, err := s.Cluster.Nodes.List(labels.Everything()); err == nil {
		for _, n := range all {
			names[n.Name] = true
			for _, a := range n.Status.Addresses {
				used[a.Address] = true
			}
		}
	}
	if cms, err := s.Cluster.ConfigMaps.List(labels.Everything()); err == nil {
		for _, cm := range cms {
			if other, err := simagent.DecodeConfig(cm); err == nil {
				for _, m := range other.Machines {
					used[m.Address] = true
				}
			}
		}
	}
	name := ""
	for name == "" || names[name] {
		name = s.NodePool.Name + "-" + utilrand.String(5)
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	size := uint32(1) << (32 - nodeAddressRange.Bits())
	base := nodeAddressRange.Addr().As4()
	start := binary.BigEndian.Uint32(base[:])
	for i := range size {
		off := (h.Sum32() + i) % size
		if off == 0 || off == size-1 {
			continue
		}
		var ip [4]byte
		binary.BigEndian.PutUint32(ip[:], start+off)
		addr := netip.AddrFrom4(ip).String()
		if !used[addr] {
			return simagent.Machine{Name: name, Address: addr, Created: metav1.NewTime(now.Truncate(time.Second))}, nil
		}
	}
	return simagent.Machine{}, fmt.Errorf("no free node address in %s", nodeAddressRange)
}
