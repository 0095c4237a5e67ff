// Package unsupported stands for a platform type this build cannot
// provide: its pools fail validation and nothing runs for them.
package unsupported

import (
	"context"
	"fmt"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
)

// Platform is a platform type without an implementation.
type Platform struct {
	Type hypershiftv1alpha1.PlatformType
}

var _ platform.Platform = Platform{}

// Validate names the type and the supported ones.
func (p Platform) Validate(*platform.Pool) error {
	return fmt.Errorf("platform %q is not supported for NodePools: use Simulated or None", p.Type)
}

// NeedsToken is false.
func (Platform) NeedsToken() bool { return false }

// NamesMachines is false.
func (Platform) NamesMachines() bool { return false }

// SupportsAutoscaling is false.
func (Platform) SupportsAutoscaling() bool { return false }

// SupportsAutorepair is false.
func (Platform) SupportsAutorepair() bool { return false }

// UpgradesNodes is false: nothing runs.
func (Platform) UpgradesNodes(*hypershiftv1alpha1.NodePool) bool { return false }

// UnsetReplicas is zero.
func (Platform) UnsetReplicas(*platform.Pool) int32 { return 0 }

// Machines is none.
func (Platform) Machines(*platform.Pool) ([]string, error) { return nil, nil }

// NodeTemplate is empty.
func (Platform) NodeTemplate(*hypershiftv1alpha1.NodePool) platform.NodeTemplate {
	return platform.NodeTemplate{}
}

// Reconcile runs nothing.
func (Platform) Reconcile(context.Context, *platform.Pool, int32) (platform.Report, error) {
	return platform.Report{}, nil
}

// Cleanup has nothing to remove.
func (Platform) Cleanup(context.Context, *platform.Pool) error { return nil }

// Delete has nothing to remove.
func (Platform) Delete(context.Context, *platform.Pool) error { return nil }

// Sleep does nothing: nothing runs.
func (Platform) Sleep(context.Context, *platform.Pool) error { return nil }
