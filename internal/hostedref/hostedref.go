// Package hostedref ties what lives in a control-plane namespace to the
// HostedCluster it belongs to, checked rather than assumed: the labels the
// HostedCluster controller sets when it creates an object (the cluster's
// UID among them), the control-plane namespace's name, and the admin
// kubeconfig the operator may use.
//
// The admin kubeconfig the operator uses is its own copy in the
// control-plane namespace, which no tenant writes, labelled with the
// cluster's UID and read with kubeconfig.Parse. The copy beside the
// HostedCluster (status.kubeConfig) is the tenant's: the users of its
// namespace can rewrite it, so the operator hands it out and never reads
// it back.
package hostedref

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/kubeconfig"
)

// Labels that tie control-plane objects to their HostedCluster.
const (
	ClusterNameLabel      = "hypershift.dev/hostedcluster-name"
	ClusterNamespaceLabel = "hypershift.dev/hostedcluster-namespace"
	// ClusterUIDLabel holds the UID of the HostedCluster that created a
	// control-plane namespace or object. NS-NAME is ambiguous (a/b-c and
	// a-b/c both give a-b-c), so the name labels alone cannot say whose it
	// is; the UID can.
	ClusterUIDLabel = "hypershift.dev/hostedcluster-uid"
	// OwnerUIDLabel holds the UID of the object (HostedCluster or
	// NodePool) an object of a machine pool is made for, which the
	// NodePool controller checks before it changes or deletes one.
	OwnerUIDLabel = "hypershift.dev/owner-uid"
)

const (
	// AdminKubeconfigSecret is the admin kubeconfig's Secret in the
	// control-plane namespace.
	AdminKubeconfigSecret = "admin-kubeconfig" //nolint:gosec // a Secret's name, not a credential
	// AdminKubeconfigKey is the data key holding the kubeconfig, in both
	// copies.
	AdminKubeconfigKey = "kubeconfig"
)

// ControlPlaneNamespace is HyperShift's convention: NS-NAME.
func ControlPlaneNamespace(hc *hypershiftv1alpha1.HostedCluster) string {
	return ControlPlaneKey(client.ObjectKeyFromObject(hc)).Namespace
}

// ControlPlaneKey is where the HostedControlPlane of the HostedCluster at
// key is: its control-plane namespace, by the cluster's name. The
// operator's connections to hosted clusters are keyed by it.
func ControlPlaneKey(key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: key.Namespace + "-" + key.Name, Name: key.Name}
}

// OperatorKubeconfig is the kubeconfig the operator's own connection to a
// hosted cluster uses, made from the admin kubeconfig: while the control
// plane may sleep when idle, it goes to the endpoint proxy's internal
// listener (status.activity.internalEndpoint), so that the operator's
// watches are not counted as a client's activity. Every controller that
// connects to the cluster asks here, so that they share one connection
// (internal/clustercache).
func OperatorKubeconfig(admin []byte, hcp *hypershiftv1alpha1.HostedControlPlane) ([]byte, error) {
	if !IdleWake(hcp) {
		return admin, nil
	}
	a := hcp.Status.Activity
	if a == nil || a.InternalEndpoint == nil {
		return admin, nil
	}
	return kubeconfig.WithServer(admin, "https://"+net.JoinHostPort(a.InternalEndpoint.Host, strconv.Itoa(int(a.InternalEndpoint.Port))))
}

// IdleWake reports whether the control plane sleeps when idle and wakes on a request
// (spec.hibernation.idleAfter).
func IdleWake(hcp *hypershiftv1alpha1.HostedControlPlane) bool {
	h := hcp.Spec.Hibernation
	return h != nil && h.IdleAfter != nil && h.IdleAfter.Duration > 0
}

// AdminKubeconfig returns the admin kubeconfig of hc from its control-plane
// namespace, refusing a Secret that does not carry hc's UID and a
// kubeconfig that is more than inline credentials.
func AdminKubeconfig(ctx context.Context, r client.Reader, hc *hypershiftv1alpha1.HostedCluster) ([]byte, *rest.Config, error) {
	key := client.ObjectKey{Namespace: ControlPlaneNamespace(hc), Name: AdminKubeconfigSecret}
	secret := &corev1.Secret{}
	if err := r.Get(ctx, key, secret); err != nil {
		return nil, nil, fmt.Errorf("admin kubeconfig %s of %s/%s: %w", key, hc.Namespace, hc.Name, err)
	}
	return AdminKubeconfigOf(secret, hc)
}

// AdminKubeconfigOf is AdminKubeconfig for the Secret already read: its
// kubeconfig, refused unless the Secret carries hc's UID and the
// kubeconfig is inline credentials only.
func AdminKubeconfigOf(secret *corev1.Secret, hc *hypershiftv1alpha1.HostedCluster) ([]byte, *rest.Config, error) {
	if uid := secret.Labels[ClusterUIDLabel]; uid != string(hc.UID) {
		return nil, nil, fmt.Errorf("admin kubeconfig %s/%s is labelled %s=%q, not this cluster's UID (HostedCluster %s/%s): not used",
			secret.Namespace, secret.Name, ClusterUIDLabel, uid, hc.Namespace, hc.Name)
	}
	data := secret.Data[AdminKubeconfigKey]
	cfg, err := kubeconfig.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("admin kubeconfig %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return data, cfg, nil
}

// Owner returns the HostedCluster a HostedControlPlane belongs to: the one
// its labels name, with the UID they carry, whose control-plane namespace
// and name it has. A HostedControlPlane made by hand — in a namespace of its
// maker's, or naming a cluster it is not the control plane of — has none,
// and gets nothing done with that cluster's authority (its Secrets, its
// restore).
func Owner(ctx context.Context, r client.Reader, hcp *hypershiftv1alpha1.HostedControlPlane) (*hypershiftv1alpha1.HostedCluster, error) {
	labels := hcp.GetLabels()
	key := types.NamespacedName{Namespace: labels[ClusterNamespaceLabel], Name: labels[ClusterNameLabel]}
	uid := labels[ClusterUIDLabel]
	if key.Namespace == "" || key.Name == "" || uid == "" {
		return nil, fmt.Errorf("HostedControlPlane %s/%s has no %s, %s and %s labels: no HostedCluster owns it",
			hcp.Namespace, hcp.Name, ClusterNamespaceLabel, ClusterNameLabel, ClusterUIDLabel)
	}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := r.Get(ctx, key, hc); err != nil {
		return nil, fmt.Errorf("HostedControlPlane %s/%s: its HostedCluster %s: %w", hcp.Namespace, hcp.Name, key, err)
	}
	switch {
	case string(hc.UID) != uid:
		return nil, fmt.Errorf("HostedControlPlane %s/%s is labelled with UID %s, HostedCluster %s has %s: not its control plane", hcp.Namespace, hcp.Name, uid, key, hc.UID)
	case hcp.Namespace != ControlPlaneNamespace(hc) || hcp.Name != hc.Name:
		return nil, fmt.Errorf("HostedControlPlane %s/%s is not at %s/%s, where HostedCluster %s keeps its control plane", hcp.Namespace, hcp.Name, ControlPlaneNamespace(hc), hc.Name, key)
	}
	return hc, nil
}
