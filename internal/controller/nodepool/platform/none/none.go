// Package none is the None platform: bring-your-own nodes. A host joins
// with `hypershift join` and a token `hypershift create join-command` made;
// its nodes are counted, the pool neither adds nor removes machines.
package none

import (
	"context"
	"time"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
)

// Platform is the None platform.
type Platform struct{}

var _ platform.Platform = Platform{}

// Validate accepts every pool.
func (Platform) Validate(*platform.Pool) error { return nil }

// NeedsToken is false: tokens come from `hypershift create join-command`.
func (Platform) NeedsToken() bool { return false }

// NamesMachines is false: a joining host names its node.
func (Platform) NamesMachines() bool { return false }

// SupportsAutoscaling is false: the pool cannot add machines.
func (Platform) SupportsAutoscaling() bool { return false }

// SupportsAutorepair is false: the pool cannot replace machines.
func (Platform) SupportsAutorepair() bool { return false }

// UpgradesNodes is true for InPlace pools (inplace.go); the nodes of
// other pools run the kubelet they joined with (nothing can replace them).
func (Platform) UpgradesNodes(np *hypershiftv1alpha1.NodePool) bool { return inPlace(np) }

// UnsetReplicas is the number of nodes that joined: a pool without a
// count takes as many nodes as join it.
func (Platform) UnsetReplicas(p *platform.Pool) int32 {
	return int32(len(p.Nodes)) //nolint:gosec // node counts fit in int32
}

// Machines are the pool's nodes.
func (Platform) Machines(p *platform.Pool) ([]string, error) {
	out := make([]string, 0, len(p.Nodes))
	for name := range p.Nodes {
		out = append(out, name)
	}
	return out, nil
}

// NodeTemplate is empty: the platform makes no nodes.
func (Platform) NodeTemplate(*hypershiftv1alpha1.NodePool) platform.NodeTemplate {
	return platform.NodeTemplate{}
}

// Reconcile counts the pool's nodes and, for an InPlace pool whose nodes
// do not all run its version, carries out the next step of the rollout.
func (Platform) Reconcile(ctx context.Context, p *platform.Pool, _ int32) (platform.Report, error) {
	report := platform.Report{Machines: int32(len(p.Nodes))} //nolint:gosec // node counts fit in int32
	if !inPlace(p.NodePool) || p.VersionHeld || p.Deleting || p.Version == "" || p.Cluster == nil {
		return report, nil
	}
	return report, rollInPlace(ctx, p, time.Now(), &report)
}

// Cleanup has nothing to remove.
func (Platform) Cleanup(context.Context, *platform.Pool) error { return nil }

// Delete has nothing to remove.
func (Platform) Delete(context.Context, *platform.Pool) error { return nil }

// Sleep does nothing: real nodes keep running while their cluster
// sleeps, and register again when it answers.
func (Platform) Sleep(context.Context, *platform.Pool) error { return nil }
