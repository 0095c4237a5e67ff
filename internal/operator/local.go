package operator

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"hypershift.dev/internal/controller/nodepool"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/hostnet"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
)

// Local is the operator of `hypershift up` and `hypershift operator`: its
// hosted control planes and node agents run as local processes under a
// data dir, in DATA_DIR/clusters and DATA_DIR/nodes.
type Local struct {
	Manager ctrl.Manager
	// Hosted runs hosted control planes, Nodes the node agents.
	Hosted, Nodes *process.Runtime

	layout datadir.Layout
	log    logr.Logger
}

// NewLocal builds the local operator. opts supplies the management
// cluster and the listen addresses; the runtimes, their events and the
// advertise address are filled in here.
func NewLocal(layout datadir.Layout, log logr.Logger, opts Options) (*Local, error) {
	events, notify := NewEvents()
	hosted, err := process.New(process.Options{
		Root: layout.Clusters(), Releases: opts.Releases, Log: log.WithName("hosted"), OnChange: notify,
		Nice: opts.ControlPlaneNice,
	})
	if err != nil {
		return nil, err
	}
	nodeEvents, notifyNodes := nodepool.NewRuntimeEvents()
	nodes, err := process.New(process.Options{Root: layout.Nodes(), Releases: opts.Releases, Log: log.WithName("nodes"), OnChange: notifyNodes})
	if err != nil {
		return nil, err
	}
	opts.Runtime, opts.Events = hosted, events
	if opts.MaxStartingControlPlanes > 0 {
		opts.StartQueue = &runtime.StartQueue{Slots: opts.MaxStartingControlPlanes, Admitted: notify}
	}
	opts.NodeRuntime, opts.NodeEvents = nodes, nodeEvents
	if ip := hostnet.HostIPv4(); ip != nil {
		opts.AdvertiseAddress = ip.String()
	}
	mgr, err := New(opts)
	if err != nil {
		return nil, err
	}
	return &Local{Manager: mgr, Hosted: hosted, Nodes: nodes, layout: layout, log: log}, nil
}

// StopAll stops every node agent, then every hosted control plane, and
// whatever an earlier run left unsupervised under their directories.
// Node agents go first: they would only log errors once their API is gone.
func (l *Local) StopAll(ctx context.Context) {
	l.Nodes.StopAll(ctx)
	process.StopOrphans(l.layout.Nodes(), l.log)
	l.Hosted.StopAll(ctx)
	process.StopOrphans(l.layout.Clusters(), l.log)
}

// Release leaves hosted control planes and node agents running when the
// operator exits; the next operator adopts them.
func (l *Local) Release() {
	l.Nodes.Release()
	l.Hosted.Release()
}

// InstallAPI installs or upgrades the hypershift.dev CRDs and the process
// runtime's policies, for the Kubernetes versions the operator runs (nil:
// the compiled-in one), in the management cluster of cfg.
func InstallAPI(ctx context.Context, cfg *rest.Config, versions []string) error {
	return installRuntimeAPI(ctx, cfg, install.RuntimeProcess, versions, "")
}
