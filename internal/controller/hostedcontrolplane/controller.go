// Package hostedcontrolplane reconciles HostedControlPlanes: it renders the
// control plane's components and hands them to a runtime, and reports their
// state as conditions.
package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/dataplane"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/workloadidentity"
)

// Finalizer keeps a HostedControlPlane until its components are stopped and
// their data removed.
const Finalizer = "hypershift.dev/hostedcontrolplane"

// Reconciler reconciles HostedControlPlanes.
type Reconciler struct {
	Client  client.Client
	Runtime runtime.Runtime
	// EndpointHost is the address clients use to reach hosted API servers.
	EndpointHost string
	// BindAddress is the IP address of EndpointHost, where the published
	// API endpoints listen; empty means loopback.
	BindAddress string
	// Events receives a HostedControlPlane whenever the runtime sees one of
	// its components change; may be nil.
	Events <-chan event.GenericEvent
	// Releases are the releases the release server of a platform None
	// control plane serves (the runtime's catalog); nil: the compiled-in
	// one.
	Releases *release.Catalog
	// LeafValidity is how long the controller manager signs the kubelets'
	// certificates for (they renew them themselves); zero: upstream's
	// default, a year.
	LeafValidity time.Duration
	// BackupFileRoot is the directory file:// archives must be in
	// (backup.CheckFileRoot); empty refuses file:// archives.
	BackupFileRoot string
	// StartQueue, when set, admits the cold starts of control planes: the
	// others wait their turn (startqueue.go).
	StartQueue *runtime.StartQueue
	// Recorder reports objects of the hosted cluster that were deleted or
	// changed and restored; SetupWithManager sets it when nil.
	Recorder events.EventRecorder
	// Clusters are the operator's connections to hosted clusters, shared
	// with its other controllers.
	Clusters *clustercache.Cache

	hostedOnce sync.Once
	hosted     *hostedClusters

	activityOnce  sync.Once
	activityWatch *activityWatcher

	// nodesSeen holds the control planes whose hosted cluster had a node
	// (types.NamespacedName → struct{}): they run a scheduler (scheduler.go).
	nodesSeen sync.Map
}

// hostedClusters is the controller's part of the connections to the hosted
// clusters, made on first use.
func (r *Reconciler) hostedClusters() *hostedClusters {
	r.hostedOnce.Do(func() { r.hosted = newHostedClusters(r.Clusters) })
	return r.hosted
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, hcp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The runtime keys data by namespace; the HostedControlPlane's UID marks
	// it as this object's, so an HCP that maps to another's directory is
	// refused instead of sharing it.
	ref := runtime.ControlPlaneRef{Namespace: hcp.Namespace, Name: hcp.Name, Owner: string(hcp.UID)}
	s := &scope{hcp: hcp, ref: ref}
	pass := lifecycle.Pass{
		Client: r.Client, Object: hcp, Finalizer: Finalizer,
		Conditions: &hcp.Status.Conditions, PausedUntil: hcp.Spec.PausedUntil, Now: time.Now(),
	}
	// A start's slot is released once the pass has written Available, not
	// when the phase saw the API serve: the next start in line, which the
	// release wakes (and another worker may run at once), must not begin
	// while the status still says this one is starting.
	defer func() {
		if s.available && r.StartQueue != nil {
			r.StartQueue.Started(s.ref)
		}
	}()
	return pass.Run(ctx,
		func(ctx context.Context) (ctrl.Result, error) {
			// Each phase needs what the one before made.
			res, err := lifecycle.RunPhases(ctx, s, []lifecycle.Phase[*scope]{
				{Name: "render components", Run: r.reconcileRender},
				{Name: "restore", Run: r.reconcileRestore},
				{Name: "hibernation", Run: r.reconcileHibernation},
				{Name: "fence", Run: r.reconcileFence},
				{Name: "start queue", Run: r.reconcileStartQueue},
				{Name: "run components", Run: r.reconcileRuntime},
				{Name: "data plane inputs", Run: r.reconcileDataPlaneInputs},
				{Name: "status", Run: r.reconcileStatus},
				{Name: "hosted cluster config", Run: r.reconcileHostedClusterConfig},
			})
			return lifecycle.Soonest(res, s.requeue), err
		},
		func(ctx context.Context) (ctrl.Result, error) { return r.reconcileDelete(ctx, hcp, ref) })
}

// scope is what the phases of one reconcile share.
type scope struct {
	hcp   *hypershiftv1alpha1.HostedControlPlane
	ref   runtime.ControlPlaneRef
	specs []runtime.Spec
	ports map[string]int
	// rootCAs is the root CA bundle the rendered components serve under:
	// what the workload-identity webhook's registration trusts.
	rootCAs []byte
	// etcdClientURLs are where the operator reaches the etcd members.
	etcdClientURLs []string
	// available: the hosted API serves (from the components' states).
	available bool
	// dataPlane renders the in-cluster objects; notApplied says which are
	// left out and why.
	dataPlane  dataplane.Config
	notApplied string
	// notAppliedComing: what notApplied waits for is on its way, so the
	// control plane is Progressing.
	notAppliedComing bool
	// requeue is the soonest another look is wanted.
	requeue ctrl.Result
	// rollout is how far the components are at rolloutTo (upgrade.go).
	rollout   *rolloutPlan
	rolloutTo string
	// hibernated: the control plane sleeps (spec.hibernation); with
	// sleepInPlace the runtime's Sleep stops it instead of an Apply.
	hibernated, sleepInPlace bool
	// fenced: only etcd runs (fence.go); with fenceInPlace the runtime's
	// Fence stops the writers instead of an Apply, and writersLeft is what
	// it reported still running.
	fenced, fenceInPlace bool
	writersLeft          []string
}

// requeueAfter asks for another pass within d.
func (s *scope) requeueAfter(d time.Duration) {
	s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: d})
}

// reconcileRender renders the components from the cluster's PKI, waiting
// for the PKI the HostedCluster controller makes.
func (r *Reconciler) reconcileRender(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	specs, err := r.render(ctx, s)
	if errors.Is(err, pki.ErrMissing) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Progressing, true,
			hypershiftv1alpha1.WaitingForComponentsReason, "Waiting for the cluster's PKI")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if errors.Is(err, runtime.ErrNotOwner) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RuntimeErrorReason, err.Error())
	}
	s.specs = specs
	return ctrl.Result{}, err
}

// reconcileRuntime hands the rendered components to the runtime.
func (r *Reconciler) reconcileRuntime(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.sleepInPlace {
		return ctrl.Result{}, r.sleepInPlace(ctx, s)
	}
	if s.fenceInPlace {
		return ctrl.Result{}, r.fenceInPlace(ctx, s)
	}
	if err := r.Runtime.Apply(ctx, s.ref, s.specs); err != nil {
		conditions.Set(&s.hcp.Status.Conditions, s.hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RuntimeErrorReason, err.Error())
		return ctrl.Result{}, err
	}
	host, port, ok, err := r.Runtime.Published(ctx, s.ref, components.EndpointPort)
	switch {
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("published endpoint: %w", err)
	case ok:
		s.hcp.Status.ControlPlaneEndpoint = hypershiftv1alpha1.APIEndpoint{Host: host, Port: int32(port)} //nolint:gosec // ports fit in int32
		s.hcp.Status.EtcdClientURLs = s.etcdClientURLs
	case s.hibernated || s.fenced:
		// Nothing publishes it while it sleeps or is fenced; it comes back
		// on the same port.
	default:
		s.requeueAfter(time.Second) // a node port or load balancer on its way
	}
	return ctrl.Result{}, nil
}

// reconcileStatus reports the components' states, and looks again soon
// while some do not run yet. The later phase still runs: it needs to know
// whether the API serves.
func (r *Reconciler) reconcileStatus(_ context.Context, s *scope) (ctrl.Result, error) {
	if s.hibernated {
		r.updateHibernatedStatus(s)
		setNotFenced(s.hcp)
		return ctrl.Result{}, nil
	}
	if s.fenced {
		r.updateFencedStatus(s)
		return ctrl.Result{}, nil
	}
	setNotFenced(s.hcp)
	var waiting []string
	if s.notAppliedComing {
		waiting = append(waiting, "Not applied in the hosted cluster yet: "+s.notApplied)
	}
	d := r.updateStatus(s.hcp, s.ref, waiting)
	r.updateVersionStatus(s, time.Now())
	s.available = d.available // releases a start's slot when the pass ends
	setAwakeCondition(s.hcp, d.available)
	s.hcp.Status.ObservedGeneration = s.hcp.Generation
	if !d.allRunning {
		s.requeueAfter(2 * time.Second)
	} else {
		s.requeueAfter(30 * time.Second)
	}
	return ctrl.Result{}, nil
}

func (r *Reconciler) render(ctx context.Context, s *scope) ([]runtime.Spec, error) {
	cfg, err := r.renderConfig(ctx, s)
	if err != nil {
		return nil, err
	}
	return r.renderRollout(s, cfg)
}

// renderConfig is the control plane's configuration, its version aside.
func (r *Reconciler) renderConfig(ctx context.Context, s *scope) (components.Config, error) {
	hcp, ref := s.hcp, s.ref
	store := pki.SecretStore{Ctx: ctx, Client: r.Client, Namespace: hcp.Namespace, ReadOnly: true}
	certs, err := pki.EnsureControlPlane(store, pki.ControlPlaneOptions{})
	if err != nil {
		return components.Config{}, err
	}
	encryptionKey := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: hcp.Namespace, Name: pki.EncryptionKeyName}, encryptionKey); err != nil {
		if apierrors.IsNotFound(err) {
			return components.Config{}, fmt.Errorf("%s: %w", pki.EncryptionKeyName, pki.ErrMissing)
		}
		return components.Config{}, err
	}
	replicas := components.SingleReplica
	if hcp.Spec.ControllerAvailabilityPolicy == hypershiftv1alpha1.HighlyAvailable {
		replicas = components.HighlyAvailable
	}
	portNames := components.PortNames(replicas)
	if hostedref.IdleWake(hcp) {
		portNames = append(portNames, components.IdleWakePortNames(replicas)...)
	}
	layout := r.Runtime.Layout(ref)
	releaseServer := servesReleases(hcp, r.Runtime.Capabilities())
	if releaseServer {
		portNames = append(portNames, components.ReleaseServerPortNames()...)
	}
	webhook := workloadIdentityConfig(hcp, r.Runtime.Capabilities())
	if webhook != nil {
		portNames = append(portNames, components.WorkloadIdentityWebhookPortNames()...)
	}
	ports, err := r.Runtime.Ports(ctx, ref, components.PortRequest(portNames))
	if err != nil {
		return components.Config{}, fmt.Errorf("ports: %w", err)
	}
	s.ports = ports
	s.rootCAs = certs.Bundle(pki.RootCAName)
	s.etcdClientURLs = components.EtcdClientURLs(replicas, layout, ports)
	net := hcp.Spec.Networking
	cfg := components.Config{
		Name:             hcp.Namespace,
		Layout:           layout,
		PKI:              certs,
		Replicas:         replicas,
		Ports:            ports,
		EncryptionKey:    encryptionKey.Data["key"],
		BindAddress:      r.BindAddress,
		ServiceCIDR:      net.ServiceNetwork[0].CIDR,
		ClusterCIDR:      net.ClusterNetwork[0].CIDR,
		NodeCIDRMaskSize: int(net.ClusterNetwork[0].HostPrefix),
		SingleProcess:    hcp.Annotations[hypershiftv1alpha1.SingleProcessControlPlaneAnnotation] == "true",
		WithoutScheduler: !r.schedulerWanted(hcp, ref),
		APIServer:        r.publish(hcp.Spec.Services, hypershiftv1alpha1.APIServer),
		Konnectivity:     r.publish(hcp.Spec.Services, hypershiftv1alpha1.Konnectivity),
		// The runtime runs the release of this version (internal/release).
		KubernetesVersion: hcp.Spec.KubernetesVersion,
		IdleWake:          hostedref.IdleWake(hcp),
		// Published like the Konnectivity agent port: at the endpoint host.
		ReleaseServer:              releaseServer,
		ReleasesDir:                r.Releases.Dir(),
		ReleaseServerPublish:       runtime.Publish{Type: runtime.HostPort, Address: r.EndpointHost},
		KubeletCertificateValidity: r.LeafValidity,
		ServiceAccountIssuer:       hcp.Spec.IssuerURL,
		WorkloadIdentityWebhook:    webhook,
	}
	if m := hcp.Spec.Etcd.Managed; m != nil && m.Storage.PersistentVolume != nil {
		if pv := m.Storage.PersistentVolume; pv.StorageClassName != nil {
			cfg.EtcdStorageClass = *pv.StorageClassName
		}
		if pv := m.Storage.PersistentVolume; pv.Size != nil {
			cfg.EtcdStorageSize = pv.Size.String()
		}
	}
	if cfg.NodeCIDRMaskSize == 0 {
		cfg.NodeCIDRMaskSize = 24
	}
	if cfg.HeldTrust, err = r.heldTrustOf(ctx, s, certs); err != nil {
		return components.Config{}, err
	}
	return cfg, nil
}

// publish is how a service is published: the cluster's strategy, at the
// endpoint host for HostPort.
func (r *Reconciler) publish(services []hypershiftv1alpha1.ServicePublishingStrategyMapping, service hypershiftv1alpha1.ServiceType) runtime.Publish {
	s := hypershiftv1alpha1.PublishingFor(services, service)
	p := runtime.Publish{Type: runtime.PublishType(s.Type), Address: s.Address()}
	if s.Type == hypershiftv1alpha1.HostPort {
		p.Address = r.EndpointHost
	}
	if s.NodePort != nil {
		p.NodePort = int(s.NodePort.Port)
	}
	return p
}

func (r *Reconciler) reconcileDelete(ctx context.Context, hcp *hypershiftv1alpha1.HostedControlPlane, ref runtime.ControlPlaneRef) (ctrl.Result, error) {
	// The in-cluster objects go with the hosted cluster; only the
	// connection to it is closed.
	r.hostedClusters().ext.Forget(client.ObjectKeyFromObject(hcp))
	r.activity().forget(client.ObjectKeyFromObject(hcp))
	r.nodesSeen.Delete(client.ObjectKeyFromObject(hcp))
	if r.StartQueue != nil {
		r.StartQueue.Forget(ref)
	}
	err := r.Runtime.Delete(ctx, ref)
	switch {
	case errors.Is(err, runtime.ErrNotOwner):
		// Another control plane's data: not ours to stop or remove.
		ctrl.LoggerFrom(ctx).Info("leaving components alone", "reason", err.Error())
	case errors.Is(err, runtime.ErrStopping):
		// Removed, not yet stopped: the finalizer stays until they are,
		// and the namespace goes after.
		ctrl.LoggerFrom(ctx).V(1).Info("waiting for components to stop", "reason", err.Error())
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("delete components: %w", err)
	}
	return ctrl.Result{}, lifecycle.RemoveFinalizer(ctx, r.Client, hcp, Finalizer)
}

// Workers is how many HostedControlPlanes are reconciled at a time.
const Workers = 4

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clusters == nil {
		return errors.New("hostedcontrolplane: no cache of hosted-cluster connections (Clusters) given")
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostedcontrolplane-controller")
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.HostedControlPlane{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(pkiSecretToControlPlane), builder.WithPredicates(pkiSecretChanged)).
		// Control planes are reconciled side by side; how many start at
		// once is the start queue's business, not the worker count's.
		WithOptions(controller.Options{MaxConcurrentReconciles: Workers}).
		Named("hostedcontrolplane")
	if r.Events != nil {
		b = b.WatchesRawSource(source.Channel(r.Events, &handler.EnqueueRequestForObject{}))
	}
	// Changes to the objects applied in hosted clusters, and wake requests.
	b = b.WatchesRawSource(source.Channel(r.hostedClusters().events, &handler.EnqueueRequestForObject{}))
	if err := mgr.Add(r.activity()); err != nil {
		return fmt.Errorf("activity watcher: %w", err)
	}
	return b.Complete(r)
}

// workloadIdentityConfig is the workload-identity webhook's configuration
// of spec.workloadIdentityWebhook; nil when the cluster runs none (or the
// runtime cannot serve it beside the API server, where validation refuses
// it).
func workloadIdentityConfig(hcp *hypershiftv1alpha1.HostedControlPlane, caps runtime.Capabilities) *workloadidentity.Config {
	w := hcp.Spec.WorkloadIdentityWebhook
	if w == nil || !caps.LoopbackWebhooks {
		return nil
	}
	c := workloadidentity.DefaultConfig()
	c.Azure.TenantID = w.AzureTenantID
	if w.AzureAuthorityHost != "" {
		c.Azure.AuthorityHost = w.AzureAuthorityHost
	}
	c.AWS.Region = w.AWSRegion
	c.AWS.RegionalSTS = w.AWSRegionalSTS
	return &c
}
