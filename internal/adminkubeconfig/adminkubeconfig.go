// Package adminkubeconfig reads a hosted cluster's admin kubeconfig the way
// the operator may use it: the copy the HostedCluster controller keeps in
// the cluster's control-plane namespace, which no tenant writes, labelled
// with the cluster's UID, read with kubeconfig.Parse. The copy beside the
// HostedCluster (status.kubeConfig) is the tenant's: its namespace's users
// can rewrite it, so the operator hands it out and never reads it back.
package adminkubeconfig

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/kubeconfig"
)

const (
	// SecretName is the admin kubeconfig's Secret in the control-plane
	// namespace.
	SecretName = "admin-kubeconfig" //nolint:gosec // a Secret's name, not a credential
	// Key is the data key holding the kubeconfig, in both copies.
	Key = "kubeconfig"
	// ClusterUIDLabel holds the UID of the HostedCluster that created a
	// control-plane namespace or Secret: set only by the HostedCluster
	// controller, when it creates the object.
	ClusterUIDLabel = "hypershift.dev/hostedcluster-uid"
)

// ControlPlaneNamespace is HyperShift's convention: NS-NAME.
func ControlPlaneNamespace(hc *hypershiftv1alpha1.HostedCluster) string {
	return hc.Namespace + "-" + hc.Name
}

// Read returns the admin kubeconfig of hc from its control-plane namespace,
// refusing a Secret that does not carry hc's UID (NS-NAME is ambiguous:
// a/b-c and a-b/c share a-b-c) and a kubeconfig that is more than inline
// credentials.
func Read(ctx context.Context, r client.Reader, hc *hypershiftv1alpha1.HostedCluster) ([]byte, *rest.Config, error) {
	key := client.ObjectKey{Namespace: ControlPlaneNamespace(hc), Name: SecretName}
	secret := &corev1.Secret{}
	if err := r.Get(ctx, key, secret); err != nil {
		return nil, nil, fmt.Errorf("admin kubeconfig %s of %s/%s: %w", key, hc.Namespace, hc.Name, err)
	}
	if uid := secret.Labels[ClusterUIDLabel]; uid != string(hc.UID) {
		return nil, nil, fmt.Errorf("admin kubeconfig %s: labelled %s=%q, not the UID of HostedCluster %s/%s: not this cluster's, not used",
			key, ClusterUIDLabel, uid, hc.Namespace, hc.Name)
	}
	data := secret.Data[Key]
	cfg, err := kubeconfig.Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("admin kubeconfig %s: %w", key, err)
	}
	return data, cfg, nil
}
