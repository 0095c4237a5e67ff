package kube

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// Sleep implements runtime.Runtime, in place: it scales the control plane's
// Deployments and StatefulSets to 0, keeping its Services (their node
// ports and load balancers), Secrets and etcd's volumes. The next Apply
// declares the replicas again, so the control plane comes back as it was.
func (r *Runtime) Sleep(ctx context.Context, ref runtime.ControlPlaneRef) error {
	for _, gvk := range []struct {
		kind string
		obj  func() client.Object
	}{
		{"Deployment", func() client.Object { return &appsv1.Deployment{} }},
		{"StatefulSet", func() client.Object { return &appsv1.StatefulSet{} }},
	} {
		objs, err := list(ctx, r.apiReader(), ref, appsv1.SchemeGroupVersion.WithKind(gvk.kind), ownLabels(ref))
		if err != nil {
			return err
		}
		for i := range objs {
			obj := gvk.obj()
			obj.SetNamespace(objs[i].Namespace)
			obj.SetName(objs[i].Name)
			// The preconditions make the object scaled the one listed.
			uid := objs[i].UID
			patch := client.RawPatch(types.MergePatchType,
				fmt.Appendf(nil, `{"metadata":{"uid":%q},"spec":{"replicas":0}}`, uid))
			if err := r.client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("scale %s %s/%s to 0: %w", gvk.kind, objs[i].Namespace, objs[i].Name, err)
			}
		}
	}
	return nil
}
