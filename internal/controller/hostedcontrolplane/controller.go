// Package hostedcontrolplane reconciles HostedControlPlanes: it renders the
// control plane's components and hands them to a runtime, and reports their
// state as conditions.
package hostedcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
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
	// AdvertiseAddress is the hosted API servers' address for their
	// `kubernetes` Service; empty disables its endpoint reconciler.
	AdvertiseAddress string
	// Events receives a HostedControlPlane whenever the runtime sees one of
	// its components change; may be nil.
	Events <-chan event.GenericEvent
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, hcp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The runtime keys data by namespace; the HostedControlPlane's UID marks
	// it as this object's, so an HCP that maps to another's directory is
	// refused instead of sharing it.
	ref := runtime.ControlPlaneRef{Namespace: hcp.Namespace, Name: hcp.Name, Owner: string(hcp.UID)}
	if !hcp.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.reconcileDelete(ctx, hcp, ref)
	}
	if controllerutil.AddFinalizer(hcp, Finalizer) {
		if err := r.Client.Update(ctx, hcp); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
		}
	}
	before := hcp.DeepCopy()
	defer func() {
		if err := r.Client.Status().Patch(ctx, hcp, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) && reterr == nil {
			reterr = fmt.Errorf("patch status: %w", err)
		}
	}()

	paused, pausedFor := conditions.PausedFor(hcp.Spec.PausedUntil, time.Now())
	conditions.SetPaused(&hcp.Status.Conditions, hcp.Generation, paused, hcp.Spec.PausedUntil)
	if paused {
		return ctrl.Result{RequeueAfter: pausedFor}, nil
	}

	specs, err := r.render(ctx, hcp, ref)
	if errors.Is(err, pki.ErrMissing) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Progressing, true,
			hypershiftv1alpha1.WaitingForComponentsReason, "Waiting for the cluster's PKI")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if errors.Is(err, runtime.ErrNotOwner) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RuntimeErrorReason, err.Error())
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.Runtime.Apply(ctx, ref, specs); err != nil {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.RuntimeErrorReason, err.Error())
		return ctrl.Result{}, fmt.Errorf("run components: %w", err)
	}
	allReady := r.updateStatus(hcp, ref)
	hcp.Status.ObservedGeneration = hcp.Generation
	if !allReady {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	return ctrl.Result{RequeueAfter: 30 * time.Second}, nil
}

func (r *Reconciler) render(ctx context.Context, hcp *hypershiftv1alpha1.HostedControlPlane, ref runtime.ControlPlaneRef) ([]components.Spec, error) {
	store := pki.SecretStore{Ctx: ctx, Client: r.Client, Namespace: hcp.Namespace, ReadOnly: true}
	certs, err := pki.EnsureControlPlane(store, pki.ControlPlaneOptions{})
	if err != nil {
		return nil, err
	}
	encryptionKey := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: hcp.Namespace, Name: pki.EncryptionKeyName}, encryptionKey); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: %w", pki.EncryptionKeyName, pki.ErrMissing)
		}
		return nil, err
	}
	replicas := components.SingleReplica
	if hcp.Spec.ControllerAvailabilityPolicy == hypershiftv1alpha1.HighlyAvailable {
		replicas = components.HighlyAvailable
	}
	ports, err := r.Runtime.Ports(ctx, ref, components.PortNames(replicas))
	if err != nil {
		return nil, fmt.Errorf("ports: %w", err)
	}
	hcp.Status.ControlPlaneEndpoint = hypershiftv1alpha1.APIEndpoint{Host: r.EndpointHost, Port: int32(ports[components.EndpointPort])} //nolint:gosec // ports fit in int32
	net := hcp.Spec.Networking
	cfg := components.Config{
		Name:             hcp.Namespace,
		Dir:              runtimeDir(r.Runtime, ref),
		PKI:              certs,
		Replicas:         replicas,
		Ports:            ports,
		EncryptionKey:    encryptionKey.Data["key"],
		AdvertiseAddress: r.AdvertiseAddress,
		BindAddress:      r.BindAddress,
		ServiceCIDR:      net.ServiceNetwork[0].CIDR,
		ClusterCIDR:      net.ClusterNetwork[0].CIDR,
		NodeCIDRMaskSize: int(net.ClusterNetwork[0].HostPrefix),
		SingleProcess:    hcp.Annotations[hypershiftv1alpha1.SingleProcessControlPlaneAnnotation] == "true",
	}
	if cfg.NodeCIDRMaskSize == 0 {
		cfg.NodeCIDRMaskSize = 24
	}
	return components.Render(cfg)
}

// runtimeDir asks runtimes that keep files locally where they keep them.
func runtimeDir(rt runtime.Runtime, ref runtime.ControlPlaneRef) string {
	if d, ok := rt.(interface {
		Dir(runtime.ControlPlaneRef) string
	}); ok {
		return d.Dir(ref)
	}
	return "/var/lib/hypershift"
}

func (r *Reconciler) reconcileDelete(ctx context.Context, hcp *hypershiftv1alpha1.HostedControlPlane, ref runtime.ControlPlaneRef) error {
	if !controllerutil.ContainsFinalizer(hcp, Finalizer) {
		return nil
	}
	err := r.Runtime.Delete(ctx, ref)
	switch {
	case errors.Is(err, runtime.ErrNotOwner):
		// Another control plane's data: not ours to stop or remove.
		ctrl.LoggerFrom(ctx).Info("leaving components alone", "reason", err.Error())
	case err != nil:
		return fmt.Errorf("delete components: %w", err)
	}
	controllerutil.RemoveFinalizer(hcp, Finalizer)
	return client.IgnoreNotFound(r.Client.Update(ctx, hcp))
}

// updateStatus reports the runtime's view and returns whether every
// component is running.
func (r *Reconciler) updateStatus(hcp *hypershiftv1alpha1.HostedControlPlane, ref runtime.ControlPlaneRef) bool {
	statuses := r.Runtime.Status(ref)
	hcp.Status.Components = statuses
	byComponent := map[string][]hypershiftv1alpha1.ComponentStatus{}
	var notRunning []string
	for _, s := range statuses {
		byComponent[s.Component] = append(byComponent[s.Component], s)
		if s.Phase != hypershiftv1alpha1.ComponentRunning {
			notRunning = append(notRunning, fmt.Sprintf("%s is %s", s.Name, s.Phase))
		}
	}
	gen := hcp.Generation
	// etcd serves while a majority of members runs; the API while one API
	// server runs (and, when replicated, the endpoint proxy in front).
	etcdMembers := byComponent[components.Etcd]
	etcd := componentCondition(&hcp.Status.Conditions, gen, hypershiftv1alpha1.EtcdAvailable, etcdMembers, len(etcdMembers)/2+1)
	apiInstances := append(byComponent[components.KubeAPIServer], byComponent[components.KubeControlPlane]...)
	api := componentCondition(&hcp.Status.Conditions, gen, hypershiftv1alpha1.KubeAPIServerAvailable, apiInstances, 1)
	if proxy, ok := byComponent[components.KubeAPIServerProxy]; ok && api {
		api = componentCondition(&hcp.Status.Conditions, gen, hypershiftv1alpha1.KubeAPIServerAvailable, proxy, 1)
	}
	available := etcd && api
	hcp.Status.Ready = available
	if available {
		hcp.Status.Version = hcp.Spec.KubernetesVersion
		conditions.Set(&hcp.Status.Conditions, gen, hypershiftv1alpha1.Available, true,
			hypershiftv1alpha1.AsExpectedReason, "The hosted API server is available")
	} else {
		conditions.Set(&hcp.Status.Conditions, gen, hypershiftv1alpha1.Available, false,
			hypershiftv1alpha1.WaitingForComponentsReason, "Waiting for etcd and kube-apiserver to be ready")
	}
	if len(notRunning) == 0 {
		conditions.Set(&hcp.Status.Conditions, gen, hypershiftv1alpha1.Progressing, false,
			hypershiftv1alpha1.ComponentsReadyReason, "All components are running")
	} else {
		conditions.Set(&hcp.Status.Conditions, gen, hypershiftv1alpha1.Progressing, true,
			hypershiftv1alpha1.WaitingForComponentsReason, joinMessages(notRunning))
	}
	var degraded []string
	for _, s := range statuses {
		if s.Phase == hypershiftv1alpha1.ComponentBackOff || s.Phase == hypershiftv1alpha1.ComponentUnhealthy {
			degraded = append(degraded, fmt.Sprintf("%s is %s (restarts %d, last exit %q): %s", s.Name, s.Phase, s.Restarts, s.LastExitReason, s.Message))
		}
	}
	if len(degraded) > 0 {
		conditions.Set(&hcp.Status.Conditions, gen, hypershiftv1alpha1.Degraded, true,
			hypershiftv1alpha1.ComponentNotReadyReason, joinMessages(degraded))
	} else {
		conditions.Set(&hcp.Status.Conditions, gen, hypershiftv1alpha1.Degraded, false,
			hypershiftv1alpha1.AsExpectedReason, "No component is failing")
	}
	return len(notRunning) == 0
}

// componentCondition sets typ True when at least need of the instances run,
// and says which do not otherwise.
func componentCondition(conds *[]metav1.Condition, gen int64, typ string, instances []hypershiftv1alpha1.ComponentStatus, need int) bool {
	var running, other []string
	for _, s := range instances {
		if s.Phase == hypershiftv1alpha1.ComponentRunning {
			running = append(running, s.Name)
			continue
		}
		msg := s.Name + " is " + string(s.Phase)
		if s.Message != "" {
			msg += ": " + s.Message
		}
		other = append(other, msg)
	}
	if len(instances) > 0 && len(running) >= need {
		conditions.Set(conds, gen, typ, true, hypershiftv1alpha1.AsExpectedReason, strings.Join(running, ", ")+" running")
		return true
	}
	msg := "not started yet"
	if len(other) > 0 {
		msg = strings.Join(other, "; ")
	}
	conditions.Set(conds, gen, typ, false, hypershiftv1alpha1.ComponentNotReadyReason, msg)
	return false
}

func joinMessages(msgs []string) string {
	out := strings.Join(msgs, "; ")
	if len(out) > 32000 {
		out = out[:32000]
	}
	return out
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.HostedControlPlane{}).
		Named("hostedcontrolplane")
	if r.Events != nil {
		b = b.WatchesRawSource(source.Channel(r.Events, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
