package managementplane

import (
	"context"
	"fmt"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/runtime"
)

// clusterAPIRef is where the process runtime keeps Cluster API's manager:
// DATA_DIR/cluster-api, beside the management plane's own processes.
var clusterAPIRef = runtime.ControlPlaneRef{Namespace: "cluster-api", Name: "cluster-api"}

// StartClusterAPI runs Cluster API's manager (m) against the management
// plane, supervised as its other processes are, and returns once it has
// installed its CRDs and is ready. It is started when it is first needed
// (a NodePool of a machine platform): a plane without machines runs none of
// it. Calling it again, with the manager running, does nothing.
func (p *Plane) StartClusterAPI(ctx context.Context, m clusterapi.Manager) error {
	p.clusterAPIMu.Lock()
	defer p.clusterAPIMu.Unlock()
	if p.clusterAPIStarted {
		return p.clusterAPIReady(ctx)
	}
	if err := m.Check(); err != nil {
		return err
	}
	ports, err := p.runtime.Ports(ctx, clusterAPIRef, map[string]int{clusterapi.HealthPort: 0})
	if err != nil {
		return err
	}
	if err := p.runtime.Apply(ctx, clusterAPIRef, []runtime.Spec{m.Spec(p.Kubeconfig, ports[clusterapi.HealthPort])}); err != nil {
		return fmt.Errorf("start Cluster API: %w", err)
	}
	p.clusterAPIStarted = true
	return p.clusterAPIReady(ctx)
}

// clusterAPIReady says whether the manager is ready; an error names its
// state and last log lines while it is not.
func (p *Plane) clusterAPIReady(_ context.Context) error {
	for _, s := range p.runtime.Status(clusterAPIRef) {
		if s.Phase != runtime.Running {
			return fmt.Errorf("the Cluster API manager is %s (%d restarts, logs under %s): %s", s.Phase, s.Restarts, p.runtime.Dir(clusterAPIRef), s.Message)
		}
	}
	return nil
}

// AdoptClusterAPI supervises again a manager an earlier run of this data
// dir left running (a management plane that was killed); none running,
// it does nothing.
func (p *Plane) AdoptClusterAPI(ctx context.Context, m clusterapi.Manager) error {
	if !p.runtime.Running(clusterAPIRef) {
		return nil
	}
	err := p.StartClusterAPI(ctx, m)
	if p.clusterAPIStarted {
		return nil // applied: it becomes ready in its own time
	}
	return err
}

// stopClusterAPI stops the manager, also one an earlier run left behind.
func (p *Plane) stopClusterAPI(ctx context.Context) {
	p.clusterAPIMu.Lock()
	defer p.clusterAPIMu.Unlock()
	p.runtime.Stop(ctx, clusterAPIRef)
	p.clusterAPIStarted = false
}
