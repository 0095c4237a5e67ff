// Package hostedcluster reconciles HostedClusters: it makes the control-plane
// namespace NS-NAME, the cluster's PKI, its HostedControlPlane and admin
// kubeconfig, reports conditions, and removes all of it on deletion.
package hostedcluster

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
)

// Finalizer keeps a HostedCluster until everything it owns is gone.
const Finalizer = "hypershift.dev/hostedcluster"

// Labels that tie control-plane objects to their HostedCluster.
const (
	ClusterNameLabel      = hostedref.ClusterNameLabel
	ClusterNamespaceLabel = hostedref.ClusterNamespaceLabel
)

// ControlPlaneNamespace is HyperShift's convention: NS-NAME.
func ControlPlaneNamespace(hc *hypershiftv1alpha1.HostedCluster) string {
	return hostedref.ControlPlaneNamespace(hc)
}

// Reconciler reconciles HostedClusters.
type Reconciler struct {
	Client client.Client
	// APIReader reads past the cache where a stale read would lose
	// something: a cluster deleted right after its first pass must find
	// the namespace that pass created. Nil: Client.
	APIReader client.Reader
	// APIServerIPs and APIServerDNSNames are put into every hosted API
	// server's serving certificate, besides the in-cluster names.
	APIServerIPs      []net.IP
	APIServerDNSNames []string
	// Layout is the layout of the runtime that runs the control planes,
	// for a control-plane namespace: when its instances are pods, the
	// names they reach each other at go into the certificates. Nil: a
	// runtime of one host.
	Layout func(namespace string) runtime.Layout
	// Releases are the Kubernetes versions the operator runs; nil: the
	// compiled-in one only.
	Releases *release.Catalog
	// BackupFileRoot is the directory file:// archives must be in
	// (backup.CheckFileRoot); empty refuses file:// archives.
	BackupFileRoot string
	// LeafValidity and CAValidity are how long new certificates are
	// valid; zero: pki's defaults (a year, ten years). Leaves are renewed
	// two thirds into their life.
	LeafValidity, CAValidity time.Duration
	// Metrics records cluster lifecycle figures; may be nil.
	Metrics *Metrics
	// Recorder emits an Event for each condition transition; may be nil.
	Recorder events.EventRecorder

	// Runtime runs the control planes: backups find etcd through it and
	// restores place etcd data where it runs it. Nil: no backups.
	Runtime runtime.Runtime

	// ServiceAccountKeyRetireAfter is how long a rotated service-account
	// key's public half stays trusted once the new key signs; zero:
	// DefaultServiceAccountKeyRetireAfter (tests shorten it).
	ServiceAccountKeyRetireAfter time.Duration

	// Clock is the time schedules are judged at; nil: time.Now.
	Clock func() time.Time

	backupsOnce sync.Once
	backups     *backupJobs

	// emitted remembers the last status an Event was emitted for, per
	// cluster and condition: a stale cache must not repeat an Event.
	emitted sync.Map
}

// scope is what the phases of one reconcile share.
type scope struct {
	hc  *hypershiftv1alpha1.HostedCluster
	hcp *hypershiftv1alpha1.HostedControlPlane
	ns  string
	// nsOwned: the control-plane namespace is this cluster's.
	nsOwned bool
	// conflict says why the cluster is refused (another owner has its
	// control-plane namespace, or a Secret in it); empty otherwise.
	conflict string
	// requeue is when the hibernation decision changes by time alone.
	requeue ctrl.Result
	// hibernationMessage explains the hibernation decision.
	hibernationMessage string
	// fenceRefused says why a requested fence is not applied (fence.go).
	fenceRefused string
	// renewed names the certificates this reconcile reissued.
	renewed []string
	// pki is the PKI as the PKI phase left it: newer than the cache right
	// after a renewal.
	pki *pki.ControlPlane
	// pools caches nodePools' listing for the pass.
	pools *[]*hypershiftv1alpha1.NodePool
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, hc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s := &scope{hc: hc, ns: ControlPlaneNamespace(hc)}
	if hc.DeletionTimestamp.IsZero() {
		// Runs after the status patch: events and metrics report what was
		// written.
		defer r.observeTransitions(hc.DeepCopy(), hc)
	}
	pass := lifecycle.Pass{
		Client: r.Client, Object: hc, Finalizer: Finalizer,
		Conditions: &hc.Status.Conditions, PausedUntil: hc.Spec.PausedUntil, Now: time.Now(),
	}
	return pass.Run(ctx,
		func(ctx context.Context) (ctrl.Result, error) { return r.reconcileNormal(ctx, s) },
		func(ctx context.Context) (ctrl.Result, error) { return r.reconcileDelete(ctx, s) })
}

// reconcileNormal validates the spec, runs the phases and derives the status.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	hc := s.hc
	if err := validateSpec(hc, r.capabilities()); err != nil {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.ValidConfiguration, false,
			hypershiftv1alpha1.UnsupportedReason, err.Error())
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.Available, false,
			hypershiftv1alpha1.InvalidConfigurationReason, "The configuration cannot be run: "+err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.ValidConfiguration, true,
		hypershiftv1alpha1.AsExpectedReason, "Configuration passes validation")

	// Each phase needs what the one before made.
	res, err := lifecycle.RunPhases(ctx, s, []lifecycle.Phase[*scope]{
		{Name: "control-plane namespace", Run: r.reconcileNamespace},
		{Name: "restore", Run: r.reconcileRestore},
		{Name: "CA rotation", Run: r.applyCARotation},
		{Name: "service-account key rotation", Run: r.applySAKeyRotation},
		{Name: "PKI", Run: r.reconcilePKI},
		{Name: "service-account issuer", Run: r.reconcileIssuer},
		{Name: "hosted control plane", Run: r.reconcileHostedControlPlane},
		{Name: "admin kubeconfig", Run: r.reconcileKubeconfig},
		{Name: "CA rotation progress", Run: r.advanceCARotation},
		{Name: "service-account key rotation progress", Run: r.advanceSAKeyRotation},
		{Name: "backup", Run: r.reconcileBackup},
	})
	if refused := (*notOwnedError)(nil); errors.As(err, &refused) {
		s.conflict = refused.Error()
		res, err = ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	r.updateStatus(s)
	reportFenceRefused(s)
	if countErr := r.countNodes(ctx, s); countErr != nil && err == nil {
		err = countErr
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if res.IsZero() && !conditions.IsTrue(hc.Status.Conditions, hypershiftv1alpha1.Available) {
		// The HostedControlPlane watch brings progress; this is a safety net.
		res.RequeueAfter = 10 * time.Second
	}
	if res.IsZero() {
		hc.Status.ObservedGeneration = hc.Generation
	}
	return lifecycle.Soonest(res, s.requeue), nil
}

// observeTransitions emits an Event for every condition transition and
// records the time a cluster took to become Available.
func (r *Reconciler) observeTransitions(before, after *hypershiftv1alpha1.HostedCluster) {
	r.recordTransitions(before, after)
	wasAvailable := conditions.IsTrue(before.Status.Conditions, hypershiftv1alpha1.Available)
	if !wasAvailable && conditions.IsTrue(after.Status.Conditions, hypershiftv1alpha1.Available) && r.Metrics != nil {
		r.Metrics.observeAvailable(after)
	}
}

// recordTransitions emits an Event for every condition whose status changed.
func (r *Reconciler) recordTransitions(before, after *hypershiftv1alpha1.HostedCluster) {
	if r.Recorder == nil {
		return
	}
	for _, c := range after.Status.Conditions {
		old := meta.FindStatusCondition(before.Status.Conditions, c.Type)
		if old != nil && old.Status == c.Status {
			continue
		}
		key := string(after.UID) + "/" + c.Type
		if last, ok := r.emitted.Swap(key, c.Status); ok && last == c.Status {
			continue
		}
		eventType := corev1.EventTypeNormal
		degraded := c.Type == hypershiftv1alpha1.Degraded.String() && c.Status == metav1.ConditionTrue
		lostAvailability := c.Type == hypershiftv1alpha1.Available.String() && c.Status == metav1.ConditionFalse && old != nil && old.Status == metav1.ConditionTrue &&
			c.Reason != hypershiftv1alpha1.HibernatedReason.String() // asked for
		if degraded || lostAvailability {
			eventType = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(after, nil, eventType, c.Reason, "Reconcile", "%s=%s: %s", c.Type, c.Status, c.Message)
	}
}

// Workers is how many HostedClusters are reconciled at a time.
const Workers = 4

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.HostedCluster{}).
		// Control-plane objects live in another namespace, where owner
		// references cannot point; labels lead back to the HostedCluster.
		Watches(&hypershiftv1alpha1.HostedControlPlane{}, handler.EnqueueRequestsFromMapFunc(toHostedCluster)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(toHostedCluster)).
		// Node counts come from the cluster's NodePools.
		Watches(&hypershiftv1alpha1.NodePool{}, handler.EnqueueRequestsFromMapFunc(nodePoolToHostedCluster),
			builder.WithPredicates(nodeCountChanged)).
		// Clusters are reconciled side by side: during a burst of creates
		// one worker would make each cluster's PKI and objects in turn.
		// Reconciles of one cluster never overlap (controller-runtime).
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		Named("hostedcluster").
		Complete(r)
}

func toHostedCluster(_ context.Context, obj client.Object) []reconcile.Request {
	labels := obj.GetLabels()
	name, ns := labels[ClusterNameLabel], labels[ClusterNamespaceLabel]
	if name == "" || ns == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
