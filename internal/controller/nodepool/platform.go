package nodepool

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	nodeplatform "hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/aws"
	"hypershift.dev/internal/controller/nodepool/platform/azure"
	"hypershift.dev/internal/controller/nodepool/platform/host"
	"hypershift.dev/internal/controller/nodepool/platform/kubevirt"
	"hypershift.dev/internal/controller/nodepool/platform/none"
	"hypershift.dev/internal/controller/nodepool/platform/simulated"
	"hypershift.dev/internal/controller/nodepool/platform/unsupported"
	"hypershift.dev/internal/nodes/drain"
	"hypershift.dev/internal/runtime"
)

// platforms makes each platform type's implementation. A new platform is a
// package beside platform/none and platform/simulated, and one line here.
var platforms = map[hypershiftv1alpha1.PlatformType]func(r *Reconciler) nodeplatform.Platform{
	hypershiftv1alpha1.SimulatedPlatform: func(r *Reconciler) nodeplatform.Platform {
		return &simulated.Platform{Runtime: r.Runtime, Now: r.now}
	},
	hypershiftv1alpha1.NonePlatform:     func(*Reconciler) nodeplatform.Platform { return none.Platform{} },
	hypershiftv1alpha1.HostPlatform:     func(r *Reconciler) nodeplatform.Platform { return host.New(r.Client, r.ClusterAPI) },
	hypershiftv1alpha1.KubeVirtPlatform: func(r *Reconciler) nodeplatform.Platform { return kubevirt.New(r.Client, r.ClusterAPI) },
	hypershiftv1alpha1.AWSPlatform: func(r *Reconciler) nodeplatform.Platform {
		return aws.New(r.Client, r.ClusterAPI, r.AWSProviderNamespace)
	},
	hypershiftv1alpha1.AzurePlatform: func(r *Reconciler) nodeplatform.Platform { return azure.New(r.Client, r.ClusterAPI) },
}

// newPlatform picks the implementation of a platform type.
func newPlatform(r *Reconciler, typ hypershiftv1alpha1.PlatformType) platform {
	if mk, ok := platforms[typ]; ok {
		return platform{impl: mk(r)}
	}
	return platform{impl: unsupported.Platform{Type: typ}}
}

// platform is the phases' handle on a pool's platform: it hands the
// implementation what this reconcile knows (scope.pool) and turns its
// report into the controller's.
type platform struct {
	impl nodeplatform.Platform
}

func (p platform) validate(s *scope) error { return p.impl.Validate(s.pool()) }

func (p platform) reconcile(ctx context.Context, s *scope, want int32) (machineReport, error) {
	r, err := p.impl.Reconcile(ctx, s.pool(), want)
	return machineReport{
		machines: r.Machines, unregistered: r.Unregistered, draining: r.Draining,
		blocked: r.Blocked, problem: r.Problem, busy: r.Busy, rollout: r.Rollout,
		status: r.MachineStatus,
	}, err
}

func (p platform) cleanup(ctx context.Context, s *scope) error {
	return p.impl.Cleanup(ctx, s.pool())
}

func (p platform) delete(ctx context.Context, s *scope) error {
	return p.impl.Delete(ctx, s.pool())
}

func (p platform) sleep(ctx context.Context, s *scope) error {
	return p.impl.Sleep(ctx, s.pool())
}

func (p platform) needsToken() bool          { return p.impl.NeedsToken() }
func (p platform) supportsAutoscaling() bool { return p.impl.SupportsAutoscaling() }
func (p platform) supportsAutorepair() bool  { return p.impl.SupportsAutorepair() }
func (p platform) upgradesNodes(np *hypershiftv1alpha1.NodePool) bool {
	return p.impl.UpgradesNodes(np)
}
func (p platform) unsetReplicas(s *scope) int32 { return p.impl.UnsetReplicas(s.pool()) }

func (p platform) nodeTemplate(np *hypershiftv1alpha1.NodePool) nodeplatform.NodeTemplate {
	return p.impl.NodeTemplate(np)
}

// admitsNodeName says whether a node of that name may join the pool: any
// name, unless the platform names the pool's machines.
func (p platform) admitsNodeName(s *scope, node string) (bool, error) {
	if !p.impl.NamesMachines() {
		return true, nil
	}
	machines, err := p.impl.Machines(s.pool())
	if err != nil {
		return false, err
	}
	for _, m := range machines {
		if m == node {
			return true, nil
		}
	}
	return false, nil
}

// idle says whether the pool's platform needs a token for its machines but
// the pool has and wants none: then it needs neither agent nor token.
func (p platform) idle(s *scope, want int32) (bool, error) {
	if !p.impl.NeedsToken() || want > 0 {
		return false, nil
	}
	machines, err := p.impl.Machines(s.pool())
	return len(machines) == 0, err
}

// pool is what the platform is told about this reconcile.
func (s *scope) pool() *nodeplatform.Pool {
	p := &nodeplatform.Pool{
		NodePool: s.np, HostedCluster: s.hc, Log: s.log, Nodes: s.nodes, Deleting: s.deleting,
		Server: s.server, CAPEM: s.caPEM, Token: s.token, RequeueBy: s.requeueBy,
		Version: s.version, VersionHeld: s.versionProblem != "",
	}
	if s.hosted != nil {
		p.Cluster = &nodeplatform.Cluster{Kube: s.hosted.kube, Nodes: s.hosted.nodes, ConfigMaps: s.hosted.configMaps, Ensured: &s.hosted.rbacDone}
	}
	return p
}

// machineReport is a platform's account of a pool's machines (see
// nodeplatform.Report).
type machineReport struct {
	machines     int32
	unregistered []string
	draining     []string
	blocked      int
	problem      string
	busy         bool
	rollout      string
	// status is what the machines say of their readiness and versions;
	// nil when the platform's machines do not report them.
	status *nodeplatform.MachineStatus
}

// Autorepair thresholds, for the AutorepairEnabled message.
const (
	unhealthyNodeTimeout = simulated.UnhealthyNodeTimeout
	nodeStartupTimeout   = simulated.NodeStartupTimeout
)

func nodeReady(node *corev1.Node) bool { return drain.NodeReady(node) }

// poolOfAgent maps a node runtime's ref to the pool whose agent it is.
func poolOfAgent(ref runtime.ControlPlaneRef) (types.NamespacedName, bool) {
	return simulated.PoolOfAgent(ref)
}
