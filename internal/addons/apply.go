package addons

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyUnstructured server-side applies u under FieldManager, taking over
// fields others set (the addon's manifest is the truth).
func applyUnstructured(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	u = u.DeepCopy()
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "metadata", "resourceVersion")
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s: %w", u.GetKind(), namespacedName(u.GetNamespace(), u.GetName()), err)
	}
	return nil
}

// applyTyped applies a typed object (the connector's own objects).
func applyTyped(ctx context.Context, c client.Client, obj client.Object) error {
	gvks, _, err := c.Scheme().ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("kind of %T: %w", obj, err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("%T %s: %w", obj, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvks[0])
	return applyUnstructured(ctx, c, u)
}

// getObject reads the object u names; nil when it does not exist.
func getObject(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string) (*unstructured.Unstructured, error) {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get %s %s: %w", gvk.Kind, namespacedName(ns, name), err)
	}
	return got, nil
}

// deleteOwned deletes the object if owner's label is on it (by UID, so
// one made again by someone else meanwhile is not touched) and says
// whether it is still there.
func deleteOwned(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string, owner Owner) (bool, error) {
	got, err := getObject(ctx, c, gvk, ns, name)
	if err != nil || got == nil {
		return false, err
	}
	if !owner.owns(got) {
		return false, nil // not ours: left alone
	}
	if got.GetDeletionTimestamp() != nil {
		return true, nil
	}
	uid := got.GetUID()
	bg := metav1.DeletePropagationBackground
	if err := c.Delete(ctx, got, &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, nil
		}
		return true, fmt.Errorf("delete %s %s: %w", gvk.Kind, namespacedName(ns, name), err)
	}
	return true, nil
}

func namespacedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
