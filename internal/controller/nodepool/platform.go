package nodepool

import (
	"context"
	"fmt"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// platform provides a pool's machines.
type platform interface {
	// validate says why the platform cannot run the pool, or nil.
	validate(s *scope) error
	// reconcile makes the pool have want machines: it adds machines, and
	// drains then removes surplus ones.
	reconcile(ctx context.Context, s *scope, want int32) (machineReport, error)
	// cleanup removes what the platform keeps in the hosted cluster for the
	// pool, once it has no machines left.
	cleanup(ctx context.Context, s *scope) error
	// delete removes what the platform runs for the pool outside the
	// hosted cluster (agents); it works without a hosted cluster.
	delete(ctx context.Context, s *scope) error
}

// machineReport is a platform's account of a pool's machines.
type machineReport struct {
	// machines is how many machines exist.
	machines int32
	// unregistered names machines whose node has not registered yet.
	unregistered []string
	// draining names nodes being drained for removal; blocked counts the
	// evictions a PodDisruptionBudget refused.
	draining []string
	blocked  int
	// problem says why machines cannot run (an agent that does not run);
	// empty when none.
	problem string
	// busy: machines are being added, drained or removed.
	busy bool
}

// nonePlatform is bring-your-own nodes: they join with the pool's bootstrap
// token and are counted; the pool cannot add or remove machines.
type nonePlatform struct{}

func (nonePlatform) validate(*scope) error { return nil }

func (nonePlatform) reconcile(_ context.Context, s *scope, _ int32) (machineReport, error) {
	return machineReport{machines: int32(len(s.nodes))}, nil //nolint:gosec // node counts fit in int32
}

func (nonePlatform) cleanup(context.Context, *scope) error { return nil }
func (nonePlatform) delete(context.Context, *scope) error  { return nil }

// unsupportedPlatform is a platform this build cannot provide.
type unsupportedPlatform struct {
	typ hypershiftv1alpha1.PlatformType
}

func (p unsupportedPlatform) validate(*scope) error {
	return fmt.Errorf("platform %q is not supported for NodePools: use Simulated or None", p.typ)
}

func (unsupportedPlatform) reconcile(context.Context, *scope, int32) (machineReport, error) {
	return machineReport{}, nil
}
func (unsupportedPlatform) cleanup(context.Context, *scope) error { return nil }
func (unsupportedPlatform) delete(context.Context, *scope) error  { return nil }
