// Package nodepool reconciles NodePools: it gives a pool's nodes a way into
// their hosted cluster (bootstrap token, RBAC, serving-certificate
// approval), makes the platform run as many machines as the pool asks for —
// draining nodes before removing them — and reports the pool's nodes.
//
// Platforms: Simulated runs one node agent process per pool through a
// runtime (see internal/nodes/simulated); None leaves machines to the user,
// who joins them with the pool's bootstrap token.
package nodepool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/runtime"
)

// Finalizer keeps a NodePool until its nodes are drained and removed and
// its agent is gone.
const Finalizer = "hypershift.dev/nodepool"

// Requeue intervals: while nodes drain or join, and otherwise (a safety net
// behind the watches, and the clock of autorepair and autoscaling).
const (
	requeueBusy   = 2 * time.Second
	requeueSteady = 5 * time.Minute
)

// clusterNameField indexes NodePools by spec.clusterName.
const clusterNameField = "spec.clusterName"

// Reconciler reconciles NodePools.
type Reconciler struct {
	Client client.Client
	// Runtime runs node agents (Simulated platform); nil disables it.
	Runtime runtime.Runtime
	// RuntimeEvents receives a NodePool whenever the runtime sees its agent
	// change; may be nil. See NewRuntimeEvents.
	RuntimeEvents <-chan event.GenericEvent
	// TokenTTL is the bootstrap tokens' lifetime; zero means 24 h.
	TokenTTL time.Duration
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// Clusters are the operator's connections to hosted clusters, shared
	// with its other controllers.
	Clusters *clustercache.Cache
	// ClusterAPI runs Cluster API's controllers, which make the machines
	// of machine platforms (Host, KubeVirt, AWS, Azure), and says whether they are ready; nil:
	// this operator runs none, and such pools fail validation.
	ClusterAPI func(context.Context) error
	// AWSProviderNamespace is where cluster-api-provider-aws runs, and the
	// Secrets of AWS clusters' identities are written; "":
	// aws.DefaultProviderNamespace.
	AWSProviderNamespace string

	hosted  *hostedClusters
	scaling autoscalerState
}

// scope is what the phases of one reconcile share.
type scope struct {
	np  *hypershiftv1alpha1.NodePool
	hc  *hypershiftv1alpha1.HostedCluster
	log logr.Logger
	// hosted is the connection to the hosted cluster, once it serves.
	hosted *hostedCluster
	// nodes are the pool's Nodes, by name.
	nodes map[string]*corev1.Node
	// platform manages the pool's machines.
	platform platform
	// machines is what the platform reported after reconciling.
	machines machineReport
	// deleting: scale to zero and remove everything.
	deleting bool
	// server and caPEM reach the hosted API server; token is the pool's
	// current bootstrap token.
	server string
	caPEM  []byte
	token  bootstrap.Token
	// want is the number of machines the pool should have; sized says
	// that this pass got that far (a pass that failed before did not).
	want  int32
	sized bool
	// version is the kubelet version the pool's nodes are to run;
	// versionProblem says why spec.kubernetesVersion is not rolled out
	// (then version is the one the nodes run).
	version        string
	versionProblem string
	// requeueAfter is the soonest time a phase wants to look again.
	requeueAfter time.Duration
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	np := &hypershiftv1alpha1.NodePool{}
	if err := r.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{np: np, log: ctrl.LoggerFrom(ctx).WithValues("hostedCluster", np.Spec.ClusterName), platform: r.platformFor(np)}
	pass := lifecycle.Pass{
		Client: r.Client, Object: np, Finalizer: Finalizer,
		Conditions: &np.Status.Conditions, PausedUntil: np.Spec.PausedUntil, Now: r.now(),
	}
	return pass.Run(ctrl.LoggerInto(ctx, s.log),
		func(ctx context.Context) (ctrl.Result, error) { return r.reconcileNormal(ctx, s) },
		func(ctx context.Context) (ctrl.Result, error) { return r.reconcileDelete(ctx, s) })
}

// reconcileNormal runs the phases and reports the pool's machines and nodes.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	// Each phase needs what the one before found: a usable platform, the
	// hosted cluster's client, the cluster's bootstrap RBAC, the machines.
	res, err := lifecycle.RunPhases(ctx, s, []lifecycle.Phase[*scope]{
		{Name: "platform config", Run: r.reconcilePlatformConfig},
		{Name: "hosted cluster", Run: r.reconcileHostedCluster},
		{Name: "version", Run: r.reconcileVersion},
		{Name: "bootstrap", Run: r.reconcileBootstrap},
		{Name: "machines", Run: r.reconcileMachines},
		{Name: "nodes", Run: r.reconcileNodes},
	})
	r.updateStatus(s)
	if err != nil {
		if !s.sized {
			// Nothing was counted: the pool is not ready, whatever the
			// empty counts of this pass would say.
			conditions.Set(&s.np.Status.Conditions, s.np.Generation, hypershiftv1alpha1.NodePoolReady, false, reasonReconcileFailed,
				"The pool was not sized: "+err.Error())
		}
		return ctrl.Result{}, err
	}
	if res.IsZero() {
		s.np.Status.ObservedGeneration = s.np.Generation
		s.requeueBy(requeueSteady)
		if !conditions.IsTrue(s.np.Status.Conditions, hypershiftv1alpha1.NodePoolReady) {
			s.requeueBy(requeueBusy)
		}
	}
	return lifecycle.Soonest(res, ctrl.Result{RequeueAfter: s.requeueAfter}), nil
}

// NewRuntimeEvents returns a channel for node runtime notifications and
// the runtime callback that feeds it (process.Options.OnChange).
func NewRuntimeEvents() (chan event.GenericEvent, func(runtime.ControlPlaneRef)) {
	ch := make(chan event.GenericEvent, 1024)
	return ch, func(ref runtime.ControlPlaneRef) {
		key, ok := poolOfAgent(ref)
		if !ok {
			return
		}
		obj := &hypershiftv1alpha1.NodePool{}
		obj.Namespace, obj.Name = key.Namespace, key.Name
		select {
		case ch <- event.GenericEvent{Object: obj}:
		default:
		}
	}
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clusters == nil {
		return errors.New("nodepool: no cache of hosted-cluster connections (Clusters) given")
	}
	r.hosted = newHostedClusters(r.Clusters)
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &hypershiftv1alpha1.NodePool{}, clusterNameField,
		func(obj client.Object) []string {
			np, ok := obj.(*hypershiftv1alpha1.NodePool)
			if !ok {
				return nil
			}
			return []string{np.Spec.ClusterName}
		}); err != nil {
		return fmt.Errorf("index NodePools by cluster: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.NodePool{}).
		Watches(&hypershiftv1alpha1.HostedCluster{}, handler.EnqueueRequestsFromMapFunc(r.poolsOfCluster)).
		WatchesRawSource(source.Channel(r.hosted.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Named("nodepool")
	if r.RuntimeEvents != nil {
		b = b.WatchesRawSource(source.Channel(r.RuntimeEvents, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// poolsOfCluster maps a HostedCluster to its NodePools.
func (r *Reconciler) poolsOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &hypershiftv1alpha1.NodePoolList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{clusterNameField: obj.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, np := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: np.Namespace, Name: np.Name}})
	}
	return out
}

// platformFor picks the platform implementation of a pool.
func (r *Reconciler) platformFor(np *hypershiftv1alpha1.NodePool) platform {
	return newPlatform(r, np.Spec.Platform.Type)
}
