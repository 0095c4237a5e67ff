package simulated

import (
	"context"
	"errors"
	"fmt"

	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/runtime"
)

// Sleep stops the pool's agent while its cluster hibernates, keeping its
// directory (the nodes' certificates): Reconcile starts it again, and its
// nodes report Ready, once the cluster is Available.
func (p *Platform) Sleep(ctx context.Context, s *platform.Pool) error {
	if p.Runtime == nil {
		return nil
	}
	return ownAgentOnly(s, "stop agent while the cluster hibernates", p.Runtime.Apply(ctx, AgentRef(s.NodePool), nil))
}

// ownAgentOnly wraps err of what was done to the pool's agent, except
// runtime.ErrNotOwner: another pool's agent is not ours to stop or remove,
// and is left alone.
func ownAgentOnly(s *platform.Pool, what string, err error) error {
	switch {
	case errors.Is(err, runtime.ErrNotOwner):
		s.Log.Info("leaving node agent alone", "reason", err.Error())
		return nil
	case errors.Is(err, runtime.ErrStopping):
		// Removed; its pod stops on its own, nothing waits for it.
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
