package hostedcontrolplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/pki"
)

// clusterNameLabel is the HostedCluster controller's label on the PKI
// Secrets it makes in a control-plane namespace, whose HostedControlPlane
// has the cluster's name.
const clusterNameLabel = hostedref.ClusterNameLabel

// pkiSecretToControlPlane maps a PKI Secret to its control plane: a renewed
// certificate is rendered into the components as soon as the cache has
// it, not at the next resync (the renewed leaf has a third of its life to
// arrive; a short test validity leaves seconds).
func pkiSecretToControlPlane(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[clusterNameLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// pkiSecretChanged: a key pair's new content matters, and the CA
// generations a root-CA rotation creates and deletes (their trust is in the
// bundles).
var pkiSecretChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isCAGeneration(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isCAGeneration(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		secret, ok := e.ObjectNew.(*corev1.Secret)
		return ok && secret.Type == corev1.SecretTypeTLS && e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
	},
}

func isCAGeneration(obj client.Object) bool {
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Type != corev1.SecretTypeTLS {
		return false
	}
	for _, ca := range pki.CANames() {
		if secret.Name == pki.NextName(ca) || secret.Name == pki.PreviousName(ca) {
			return true
		}
	}
	return false
}
