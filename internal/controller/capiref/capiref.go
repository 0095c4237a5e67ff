// Package capiref holds what this project's Cluster API providers (the
// JoinConfig bootstrap provider, the HostMachine infrastructure provider)
// read of Cluster API's own objects, without importing its module: its
// group, kinds and labels, and the Machine that controls a provider's
// object.
package capiref

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Group is Cluster API's API group; Version the one its objects are
// written and read at.
const (
	Group   = "cluster.x-k8s.io"
	Version = "v1beta2"
	// ClusterNameLabel names a Cluster API object's Cluster.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
)

// Kinds of Cluster API read as unstructured objects.
var (
	ClusterGVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: "Cluster"}
	MachineGVK = schema.GroupVersionKind{Group: Group, Version: Version, Kind: "Machine"}
)

// OwningMachine is the Cluster API Machine that controls obj, as its
// controller owner reference names it (UID included); nil while there is
// none, or the Machine of that name is another (a different UID).
func OwningMachine(ctx context.Context, c client.Reader, obj metav1.Object) (*unstructured.Unstructured, error) {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != MachineGVK.Kind {
		return nil, nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != Group {
		return nil, nil //nolint:nilerr // not Cluster API's Machine
	}
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(MachineGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}, m); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if m.GetUID() != ref.UID {
		return nil, nil
	}
	return m, nil
}
