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
	err := p.Runtime.Apply(ctx, AgentRef(s.NodePool), nil)
	switch {
	case errors.Is(err, runtime.ErrNotOwner):
		s.Log.Info("leaving node agent alone", "reason", err.Error())
	case err != nil:
		return fmt.Errorf("stop agent while the cluster hibernates: %w", err)
	}
	return nil
}
