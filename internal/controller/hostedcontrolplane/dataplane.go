package hostedcontrolplane

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/dataplane"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/version"
)

// Inputs of the data plane in the control-plane namespace.
const (
	// adminKubeconfigSecret holds the hosted cluster's admin kubeconfig
	// (made by the HostedCluster controller).
	adminKubeconfigSecret = hostedref.AdminKubeconfigSecret
	adminKubeconfigKey    = hostedref.AdminKubeconfigKey
	// The Konnectivity agent's CA and client certificate (pki.ControlPlane
	// KonnectivityCA and KonnectivityAgent), and the name of the server's
	// agent port among the control plane's ports (components.KonnectivityPort).
	konnectivityCASecret    = "konnectivity-ca"    //nolint:gosec // a Secret's name, not a credential
	konnectivityAgentSecret = "konnectivity-agent" //nolint:gosec // a Secret's name, not a credential
	konnectivityPort        = "konnectivity"
)

// dataPlaneRecheck is how soon a pass looks again while the data plane is
// not available; the watches on the hosted cluster usually come first.
const dataPlaneRecheck = 10 * time.Second

// applyTimeout bounds connecting to and applying in one hosted cluster, so
// that one whose API server hangs does not hold the controller's worker
// (and every other cluster) up.
const applyTimeout = 20 * time.Second

// imageRef is the hypershift image the data plane's pods run
// (internal/image's Ref: built from this binary, imported on each node).
func imageRef() string { return "hypershift.dev/hypershift:" + version.Version }

// konnectivityInputCount is how many inputs the agent has: two Secrets and
// a port.
const konnectivityInputCount = 3

// reconcileDataPlaneInputs gathers what the in-cluster objects are rendered
// from. The Konnectivity agent needs its certificates and the server's
// port; until they exist its objects are left out, the rest of the data
// plane goes ahead, and DataPlaneAvailable's message says what is missing.
// While some of the three exist and others not (they are on their way:
// the HostedCluster controller makes the Secrets, rendering the server
// allocates the port), Progressing says so too. A control plane with none
// of them runs no Konnectivity server at all: nothing is on its way, so it
// is not reported as progressing forever.
func (r *Reconciler) reconcileDataPlaneInputs(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	addr, port := hcp.Spec.Networking.APIServerAddress()
	s.dataPlane = dataplane.Config{
		ServiceCIDR:      hcp.Spec.Networking.ServiceNetwork[0].CIDR,
		APIServerAddress: addr,
		APIServerPort:    port,
		Image:            imageRef(),
	}
	k, missing, err := r.konnectivityInputs(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.dataPlane.Konnectivity = k
	if servesReleases(hcp, r.Runtime.Capabilities()) {
		if s.dataPlane.Releases, err = r.releasesInput(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	if workloadIdentityConfig(hcp, r.Runtime.Capabilities()) != nil {
		if port := s.ports[components.WorkloadIdentityWebhookPort]; port != 0 && len(s.rootCAs) > 0 {
			s.dataPlane.WorkloadIdentityWebhook = &dataplane.WorkloadIdentityWebhook{
				URL: components.WorkloadIdentityWebhookURL(port), CABundle: s.rootCAs,
			}
		}
	}
	if hypershiftv1alpha1.MirrorsVolumes(hcp.Spec.Platform) {
		v := &dataplane.Volumes{}
		for _, m := range hcp.Spec.Platform.Host.StorageDriver.Manual.StorageClassMapping {
			v.StorageClasses = append(v.StorageClasses, m.GuestStorageClassName)
		}
		s.dataPlane.Volumes = v
	}
	if len(missing) > 0 {
		s.notApplied = "the Konnectivity agent (kube-system/konnectivity-agent), waiting for " + strings.Join(missing, ", ")
		s.notAppliedComing = len(missing) < konnectivityInputCount
	}
	return ctrl.Result{}, nil
}

// konnectivityInputs reads the agent's certificates and the server's port;
// missing says what does not exist yet.
func (r *Reconciler) konnectivityInputs(ctx context.Context, s *scope) (*dataplane.Konnectivity, []string, error) {
	namespace := s.hcp.Namespace
	store := pki.SecretStore{Ctx: ctx, Client: r.Client, Namespace: namespace, ReadOnly: true}
	var missing []string
	ca, ok, err := store.Get(konnectivityCASecret)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %s/%s: %w", namespace, konnectivityCASecret, err)
	}
	if !ok {
		missing = append(missing, "Secret "+namespace+"/"+konnectivityCASecret)
	}
	agent, ok, err := store.Get(konnectivityAgentSecret)
	if err != nil {
		return nil, nil, fmt.Errorf("secret %s/%s: %w", namespace, konnectivityAgentSecret, err)
	}
	if !ok {
		missing = append(missing, "Secret "+namespace+"/"+konnectivityAgentSecret)
	}
	host, port, ok, err := r.Runtime.Published(ctx, s.ref, konnectivityPort)
	if err != nil {
		return nil, nil, fmt.Errorf("published Konnectivity port: %w", err)
	}
	if !ok {
		missing = append(missing, fmt.Sprintf("the control plane's published %q port (its Konnectivity server)", konnectivityPort))
	}
	if len(missing) > 0 {
		return nil, missing, nil
	}
	return &dataplane.Konnectivity{
		ServerHost: host, ServerPort: port,
		CA: ca.CertPEM, Cert: agent.CertPEM, Key: agent.KeyPEM,
	}, nil, nil
}

// reconcileHostedClusterConfig applies the in-cluster objects with
// server-side apply, once the hosted API server is available, and reports
// their health in status.dataPlane and DataPlaneAvailable.
func (r *Reconciler) reconcileHostedClusterConfig(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := s.hcp
	setCondition := func(status bool, reason hypershiftv1alpha1.ConditionReason, message string) {
		conditions.Set(&hcp.Status.Conditions, hcp.Generation, hypershiftv1alpha1.DataPlaneAvailable, status, reason, message)
	}
	if s.hibernated || s.fenced {
		return ctrl.Result{}, nil // reported by updateHibernatedStatus, updateFencedStatus
	}
	if !s.available {
		setCondition(false, hypershiftv1alpha1.WaitingForKubeAPIServerReason,
			"Waiting for the hosted API server before applying the data plane")
		return ctrl.Result{}, nil
	}
	objs, err := dataplane.Render(s.dataPlane)
	if err != nil {
		setCondition(false, hypershiftv1alpha1.InvalidConfigurationReason, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, applyTimeout)
	defer cancel()
	hosted, err := r.connectHosted(ctx, s)
	if err != nil {
		setCondition(false, hypershiftv1alpha1.ApplyFailedReason, err.Error())
		return ctrl.Result{}, err
	}
	applied := make([]client.Object, 0, len(objs))
	for _, obj := range objs {
		cur, err := hosted.drift.unchanged(obj, hosted.cached[obj.GetObjectKind().GroupVersionKind().Kind])
		if err != nil {
			return ctrl.Result{}, err
		}
		if cur != nil {
			applied = append(applied, cur)
			continue
		}
		out, err := apply(ctx, hosted.client, obj)
		if err != nil {
			setCondition(false, hypershiftv1alpha1.ApplyFailedReason, err.Error())
			return ctrl.Result{}, err
		}
		applied = append(applied, out)
		restored, err := hosted.drift.restored(obj, out)
		if err != nil {
			return ctrl.Result{}, err
		}
		if restored != "" && r.Recorder != nil {
			r.Recorder.Eventf(hcp, nil, corev1.EventTypeWarning, hypershiftv1alpha1.DataPlaneRestoredReason, "Apply", "%s", restored)
		}
	}
	nodes, readyNodes, err := hosted.countNodes()
	if err != nil {
		return ctrl.Result{}, err
	}
	if nodes > 0 && r.sawNodes(client.ObjectKeyFromObject(hcp)) {
		s.requeueAfter(100 * time.Millisecond) // render again, with the scheduler
	}
	statuses, cond := dataplane.Health(dataplane.Observed{Objects: applied, ReadyNodes: readyNodes, NotApplied: s.notApplied})
	hcp.Status.DataPlane = statuses
	conditions.Apply(&hcp.Status.Conditions, hcp.Generation, cond)
	if cond.Status != metav1.ConditionTrue {
		s.requeueAfter(dataPlaneRecheck)
	}
	return ctrl.Result{}, nil
}

// connectHosted returns the connection to the hosted cluster, made from its
// admin kubeconfig.
func (r *Reconciler) connectHosted(ctx context.Context, s *scope) (*hostedCluster, error) {
	hcp := s.hcp
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: hcp.Namespace, Name: adminKubeconfigSecret}
	if err := r.Client.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("admin kubeconfig %s does not exist yet (the HostedCluster controller makes it)", key)
		}
		return nil, fmt.Errorf("admin kubeconfig %s: %w", key, err)
	}
	// Not through the public endpoint while the cluster may sleep when
	// idle: the operator's watches are not a client's activity. The
	// endpoint is read from the stored object, as every controller of the
	// connection reads it (the NodePool controller's view), not from this
	// pass's status, which may be ahead: two views would replace each
	// other's connection until the status is written.
	stored := &hypershiftv1alpha1.HostedControlPlane{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(hcp), stored); err != nil {
		return nil, err
	}
	kc, err := hostedref.OperatorKubeconfig(secret.Data[adminKubeconfigKey], stored)
	if err != nil {
		return nil, err
	}
	return r.hostedClusters().ext.Get(ctx, client.ObjectKeyFromObject(hcp), kc)
}

// apply server-side applies obj, taking over fields someone else changed,
// and returns the object as the API server has it now, status included.
func apply(ctx context.Context, c client.Client, obj client.Object) (client.Object, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	what := fmt.Sprintf("%s %s", gvk.Kind, client.ObjectKeyFromObject(obj))
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// Only what is rendered is declared: status belongs to controllers.
	delete(content, "status")
	unstructured.RemoveNestedField(content, "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: content}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(dataplane.FieldManager), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply %s in the hosted cluster: %w", what, err)
	}
	out, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s: not a client.Object", what)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}
