package hostedcluster

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/version"
)

// Secret names of a hosted cluster's admin kubeconfig.
const (
	// AdminKubeconfigSecret is in the control-plane namespace: the copy the
	// operator reads (hostedref.AdminKubeconfig).
	AdminKubeconfigSecret = hostedref.AdminKubeconfigSecret
	// KubeconfigKey is the data key holding the kubeconfig.
	KubeconfigKey = hostedref.AdminKubeconfigKey
)

// AdminKubeconfigSecretName is the Secret in the HostedCluster's namespace.
func AdminKubeconfigSecretName(hc *hypershiftv1alpha1.HostedCluster) string {
	return hc.Name + "-admin-kubeconfig"
}

func (s *scope) labels() map[string]string {
	return map[string]string{ClusterNameLabel: s.hc.Name, ClusterNamespaceLabel: s.hc.Namespace, ClusterUIDLabel: string(s.hc.UID)}
}

// secretStore is the cluster's PKI in its control-plane namespace; it
// refuses Secrets that are not this cluster's.
func (s *scope) secretStore(ctx context.Context, c client.Client, readOnly bool) pki.SecretStore {
	return pki.SecretStore{
		Ctx: ctx, Client: c, Namespace: s.ns, Labels: s.labels(), ReadOnly: readOnly,
		VerifyOwner: func(secret *corev1.Secret) error { return s.verifyOwner("Secret", secret.Name, secret.Labels) },
	}
}

func (r *Reconciler) reconcilePKI(ctx context.Context, s *scope) (ctrl.Result, error) {
	store := s.secretStore(ctx, r.Client, false)
	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, r.APIServerIPs...)
	if ip, err := firstServiceIP(s.hc); err == nil {
		ips = append(ips, ip)
	}
	dns := append([]string{
		"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}, r.APIServerDNSNames...)
	// Where clients reach a published API and Konnectivity server.
	for _, svc := range []hypershiftv1alpha1.ServiceType{hypershiftv1alpha1.APIServer, hypershiftv1alpha1.Konnectivity} {
		if addr := hypershiftv1alpha1.PublishingFor(s.hc.Spec.Services, svc).Address(); addr != "" {
			if ip := net.ParseIP(addr); ip != nil {
				ips = append(ips, ip)
			} else {
				dns = append(dns, addr)
			}
		}
	}
	var etcdDNS []string
	if r.Layout != nil {
		if l := r.Layout(s.ns); l.Host != nil {
			// The names the control plane's pods reach each other at.
			dns = append(dns, l.Host(components.KubeAPIServer, ""))
			etcdDNS = append(etcdDNS, l.Host(components.Etcd, ""), l.Host(components.Etcd, "*"))
		}
	}
	saKey, res, err := r.newSigningKey(ctx, s, store)
	if err != nil || !res.IsZero() {
		return res, err
	}
	cp, err := pki.EnsureControlPlane(store, pki.ControlPlaneOptions{
		APIServerIPs: ips, APIServerDNSNames: dns, EtcdDNSNames: etcdDNS,
		LeafValidity: r.LeafValidity, CAValidity: r.CAValidity, Renew: true,
		ServiceAccountKey: saKey,
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("PKI: %w", err)
	}
	s.pki = cp
	reportAuthorities(s)
	if len(cp.Renewed) > 0 {
		s.renewed = cp.Renewed
		r.recordRenewal(ctx, s)
	}
	if err := r.ensureEncryptionKey(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// The phases go on; the cluster is reconciled again when the next
	// leaf is due.
	s.requeue = lifecycle.Soonest(s.requeue, renewalRequeue(cp.NextRenewal(), time.Now()))
	return ctrl.Result{}, nil
}

// renewalRequeue is the requeue that reconciles a cluster when its next
// leaf is due; none when there is no leaf.
func renewalRequeue(next, now time.Time) ctrl.Result {
	if next.IsZero() {
		return ctrl.Result{}
	}
	// A second late, so the leaf is due when the reconcile runs.
	return ctrl.Result{RequeueAfter: max(next.Sub(now)+time.Second, time.Second)}
}

// recordRenewal logs and emits an Event for the leaves a reconcile renewed.
func (r *Reconciler) recordRenewal(ctx context.Context, s *scope) {
	msg := "Renewed certificates " + strings.Join(s.renewed, ", ")
	ctrl.LoggerFrom(ctx).Info("renewed certificates", "certificates", s.renewed)
	if r.Recorder != nil {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, CertificatesRenewedReason, "Renew", "%s", msg)
	}
}

// CertificatesRenewedReason is the reason of the Event a renewal emits.
const CertificatesRenewedReason = "CertificatesRenewed"

// ensureEncryptionKey creates the key that encrypts the hosted cluster's
// Secrets in its etcd. It is kept in the management plane, never in the
// hosted cluster, and never replaced: a new key would make existing Secrets
// unreadable.
func (r *Reconciler) ensureEncryptionKey(ctx context.Context, s *scope) error {
	key := client.ObjectKey{Namespace: s.ns, Name: pki.EncryptionKeyName}
	existing := &corev1.Secret{}
	if err := r.Client.Get(ctx, key, existing); !apierrors.IsNotFound(err) {
		if err != nil {
			return fmt.Errorf("encryption key: %w", err)
		}
		return s.verifyOwner("Secret", existing.Name, existing.Labels)
	}
	data, err := pki.NewEncryptionKey()
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: pki.EncryptionKeyName, Labels: s.labels()},
		Data:       map[string][]byte{"key": data},
	}
	if err := r.Client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("encryption key: %w", err)
	}
	return nil
}

func (r *Reconciler) reconcileHostedControlPlane(ctx context.Context, s *scope) (ctrl.Result, error) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.hc.Name}}
	pools, err := s.nodePools(ctx, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	_, err = controllerutil.CreateOrPatch(ctx, r.Client, hcp, func() error {
		hcp.Labels = s.labels()
		if len(pools) > 0 {
			metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, hypershiftv1alpha1.NodePoolsAnnotation, "true")
		} else {
			delete(hcp.Annotations, hypershiftv1alpha1.NodePoolsAnnotation)
		}
		if v, ok := s.hc.Annotations[hypershiftv1alpha1.SingleProcessControlPlaneAnnotation]; ok {
			metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, hypershiftv1alpha1.SingleProcessControlPlaneAnnotation, v)
		} else {
			delete(hcp.Annotations, hypershiftv1alpha1.SingleProcessControlPlaneAnnotation)
		}
		if err := copyRestoreRequest(s.hc, hcp); err != nil {
			return err
		}
		v := s.hc.Spec.KubernetesVersion
		if v == "" {
			v = version.KubernetesVersion
		}
		hib, err := decideHibernation(s, hcp, time.Now())
		if err != nil {
			return err
		}
		fence, refused := decideFence(s.hc, hcp, hib)
		s.fenceRefused = refused
		hcp.Spec = hypershiftv1alpha1.HostedControlPlaneSpec{
			KubernetesVersion:            v,
			Networking:                   s.hc.Spec.Networking,
			ControllerAvailabilityPolicy: s.hc.Spec.ControllerAvailabilityPolicy,
			Etcd:                         s.hc.Spec.Etcd,
			Platform:                     s.hc.Spec.Platform,
			Services:                     s.hc.Spec.Services,
			PausedUntil:                  s.hc.Spec.PausedUntil,
			Hibernation:                  hib,
			IssuerURL:                    s.hc.Spec.IssuerURL,
			WorkloadIdentityWebhook:      s.hc.Spec.WorkloadIdentityWebhook,
		}
		applyFence(hcp, fence)
		return nil
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("hosted control plane: %w", err)
	}
	s.hcp = hcp
	return ctrl.Result{}, nil
}

func (r *Reconciler) reconcileKubeconfig(ctx context.Context, s *scope) (ctrl.Result, error) {
	ep := s.hcp.Status.ControlPlaneEndpoint
	if ep.Port == 0 {
		return ctrl.Result{}, nil // the control plane has no endpoint yet
	}
	// What the PKI phase stored, not the cache: right after a renewal
	// the cache may still hold the old admin certificate.
	if s.pki == nil {
		return ctrl.Result{}, fmt.Errorf("admin kubeconfig: the PKI phase has not run")
	}
	// The root CA bundle: during a root-CA rotation the old and the new CA.
	rootCAs, admin := s.pki.Bundle(pki.RootCAName), s.pki.Admin
	kc, err := kubeconfig.Render(kubeconfig.Params{
		Name:      s.hc.Name,
		Server:    fmt.Sprintf("https://%s", net.JoinHostPort(ep.Host, fmt.Sprint(ep.Port))),
		CAPEM:     rootCAs,
		ClientPEM: admin.CertPEM,
		KeyPEM:    admin.KeyPEM,
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	inCP := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: AdminKubeconfigSecret}}
	if err := r.writeKubeconfig(ctx, inCP, s.labels(), kc, nil); err != nil {
		return ctrl.Result{}, err
	}
	// The copy beside the HostedCluster is owned by it, so it goes with it.
	beside := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.hc.Namespace, Name: AdminKubeconfigSecretName(s.hc)}}
	if err := r.writeKubeconfig(ctx, beside, s.labels(), kc, s.hc); err != nil {
		return ctrl.Result{}, err
	}
	s.hc.Status.KubeConfig = &hypershiftv1alpha1.KubeconfigSecretRef{Name: beside.Name, Key: KubeconfigKey}
	return ctrl.Result{}, nil
}

func (r *Reconciler) writeKubeconfig(ctx context.Context, secret *corev1.Secret, labels map[string]string, kc []byte, owner client.Object) error {
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, secret, func() error {
		secret.Labels = labels
		secret.Data = map[string][]byte{KubeconfigKey: kc}
		if owner != nil {
			return controllerutil.SetControllerReference(owner, secret, r.Client.Scheme())
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kubeconfig secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// reconcileDelete removes the cluster's NodePools, then — when the
// control-plane namespace is this cluster's — the control plane (its
// processes and data go with the HostedControlPlane's finalizer) and the
// namespace, then the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.hc, Finalizer) {
		return ctrl.Result{}, nil
	}
	// Node pools go first: draining them needs the control plane.
	if remaining, err := r.deleteNodePools(ctx, s); err != nil || remaining {
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	// Only a namespace carrying this cluster's UID is torn down: another
	// cluster's (a/b-c and a-b/c share NS-NAME) or a foreign one stays.
	ns, err := r.ownedNamespace(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ns != nil {
		if res, err := r.deleteControlPlane(ctx, s, ns); err != nil || !res.IsZero() {
			return res, err
		}
	}
	if remaining, err := r.deleteClusterNamespaces(ctx, s); err != nil || remaining {
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	if done, err := r.unpublishIssuer(ctx, s); err != nil || !done {
		return ctrl.Result{RequeueAfter: 5 * time.Second}, err
	}
	if r.Metrics != nil {
		r.Metrics.forget(s.hc)
	}
	r.backupJobs().forget(s.hc.UID)
	prefix := string(s.hc.UID) + "/"
	r.emitted.Range(func(key, _ any) bool {
		if k, ok := key.(string); ok && strings.HasPrefix(k, prefix) {
			r.emitted.Delete(key)
		}
		return true
	})
	controllerutil.RemoveFinalizer(s.hc, Finalizer)
	if err := r.Client.Update(ctx, s.hc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// deleteControlPlane deletes the HostedControlPlane, then the namespace,
// and reports (by a requeue) until both are gone.
func (r *Reconciler) deleteControlPlane(ctx context.Context, s *scope, ns *corev1.Namespace) (ctrl.Result, error) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	err := r.liveReader().Get(ctx, client.ObjectKey{Namespace: s.ns, Name: s.hc.Name}, hcp)
	switch {
	case err == nil:
		if hcp.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, hcp); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("delete hosted control plane: %w", err)
			}
		}
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, err
	}
	// A restore pins the archive's port before the HostedControlPlane
	// exists; a cluster deleted in between never ran, so that pin is all
	// there is to take back.
	if r.Runtime != nil {
		if err := r.Runtime.UnpinPorts(runtime.ControlPlaneRef{Namespace: s.ns, Name: s.hc.Name}); err != nil {
			return ctrl.Result{}, err
		}
	}
	if ns.DeletionTimestamp.IsZero() {
		// The preconditions make the namespace deleted the one whose labels
		// were checked, even when the cache is behind.
		pre := client.Preconditions{UID: &ns.UID, ResourceVersion: &ns.ResourceVersion}
		if err := r.Client.Delete(ctx, ns, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("delete namespace %s: %w", s.ns, err)
		}
	}
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

// deleteClusterNamespaces deletes, once the control plane is gone, the
// other namespaces made for this cluster — labelled with its UID, as only
// this operator labels them: on the kube runtime, its machines' namespace,
// which outlives the last machine while it holds the guest's volumes. It
// reports whether any is left.
func (r *Reconciler) deleteClusterNamespaces(ctx context.Context, s *scope) (bool, error) {
	list := &corev1.NamespaceList{}
	if err := r.liveReader().List(ctx, list, client.MatchingLabels{ClusterUIDLabel: string(s.hc.UID)}); err != nil {
		return false, fmt.Errorf("list the cluster's namespaces: %w", err)
	}
	for i := range list.Items {
		ns := &list.Items[i]
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, ns, client.Preconditions{UID: &ns.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("delete namespace %s: %w", ns.Name, err)
		}
	}
	return len(list.Items) > 0, nil
}

// firstServiceIP is the `kubernetes` Service's ClusterIP: the first address
// of the first service range.
func firstServiceIP(hc *hypershiftv1alpha1.HostedCluster) (net.IP, error) {
	if len(hc.Spec.Networking.ServiceNetwork) == 0 {
		return nil, fmt.Errorf("no service network")
	}
	_, ipnet, err := net.ParseCIDR(hc.Spec.Networking.ServiceNetwork[0].CIDR)
	if err != nil {
		return nil, err
	}
	ip := append(net.IP(nil), ipnet.IP...)
	ip[len(ip)-1]++
	return ip, nil
}

// deleteNodePools deletes the cluster's NodePools and reports whether any is
// still there.
func (r *Reconciler) deleteNodePools(ctx context.Context, s *scope) (bool, error) {
	pools, err := s.nodePools(ctx, r.Client)
	if err != nil {
		return false, err
	}
	for _, np := range pools {
		if np.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, np); client.IgnoreNotFound(err) != nil {
				return true, fmt.Errorf("delete node pool %s: %w", np.Name, err)
			}
		}
	}
	return len(pools) > 0, nil
}
