package hostedcontrolplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// clusterNameLabel is the HostedCluster controller's label on the PKI
// Secrets it makes in a control-plane namespace, whose HostedControlPlane
// has the cluster's name.
const clusterNameLabel = "hypershift.dev/hostedcluster-name"

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

// pkiSecretChanged: only a key pair's new content matters.
var pkiSecretChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		secret, ok := e.ObjectNew.(*corev1.Secret)
		return ok && secret.Type == corev1.SecretTypeTLS && e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
	},
}
