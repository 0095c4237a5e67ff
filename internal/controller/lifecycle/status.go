package lifecycle

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatusPatch remembers an object's status so that, at the end of a pass,
// exactly what the pass changed in it is written, as one merge patch of the
// status subresource. Only status is compared: a finalizer update in between
// (which changes metadata) does not leak into the patch.
type StatusPatch struct {
	obj    client.Object
	before any
}

// NewStatusPatch records obj's status as it is now.
func NewStatusPatch(obj client.Object) (*StatusPatch, error) {
	before, err := statusOf(obj)
	if err != nil {
		return nil, err
	}
	return &StatusPatch{obj: obj, before: before}, nil
}

// Apply writes the status changes made since NewStatusPatch; nothing when
// there are none. An object already gone is not an error: the delete path
// patches after the finalizer is removed.
func (p *StatusPatch) Apply(ctx context.Context, c client.Client) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.obj)
	if err != nil {
		return fmt.Errorf("status of %s: %w", client.ObjectKeyFromObject(p.obj), err)
	}
	if equality.Semantic.DeepEqual(u["status"], p.before) {
		return nil
	}
	// The base is the object as it is now with the old status, so the merge
	// patch holds status fields only.
	u["status"] = p.before
	base := &unstructured.Unstructured{Object: u}
	if err := c.Status().Patch(ctx, p.obj, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of %s: %w", client.ObjectKeyFromObject(p.obj), err)
	}
	return nil
}

func statusOf(obj client.Object) (any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("status of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return runtime.DeepCopyJSONValue(u["status"]), nil
}
