package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// installedKinds are the kinds install makes, in the order uninstall
// deletes them: the operator first, so it stops acting, CRDs last.
var installedKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Group: "scheduling.k8s.io", Version: "v1", Kind: "PriorityClass"},
	{Version: "v1", Kind: "Namespace"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// inUse lists "namespace/name" of every object of the API's kinds that
// holds what the operator tears down: HostedClusters, and NodePools and
// HostedControlPlanes left without one. None when the API is not
// installed.
func inUse(ctx context.Context, c client.Client) (map[string][]string, error) {
	out := map[string][]string{}
	for kind, list := range map[string]client.ObjectList{
		"HostedClusters":      &hypershiftv1alpha1.HostedClusterList{},
		"NodePools":           &hypershiftv1alpha1.NodePoolList{},
		"HostedControlPlanes": &hypershiftv1alpha1.HostedControlPlaneList{},
	} {
		if err := c.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("list %s: %w", kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			o := item.(client.Object)
			out[kind] = append(out[kind], o.GetNamespace()+"/"+o.GetName())
		}
		slices.Sort(out[kind])
	}
	return out, nil
}

// Uninstall deletes every object labelled ManagedByLabel=ManagedBy, CRDs
// last, and reports each; it refuses while HostedClusters, NodePools or
// HostedControlPlanes exist, naming them, since their control planes would
// lose their operator and their objects with the CRDs (whose deletion would
// then hang on their finalizers). With wait it returns once all of them are gone.
func Uninstall(ctx context.Context, c client.Client, wait bool, timeout time.Duration, report func(kind, key string)) error {
	used, err := inUse(ctx, c)
	if err != nil {
		return err
	}
	// HostedClusters first: destroying them removes the rest.
	for _, kind := range []string{"HostedClusters", "NodePools", "HostedControlPlanes"} {
		if names := used[kind]; len(names) > 0 {
			return fmt.Errorf("%d %s exist (%s): destroy them first (`hypershift destroy cluster --name NAME -n NAMESPACE`); nothing was removed",
				len(names), kind, strings.Join(names, ", "))
		}
	}
	var deleted []*unstructured.Unstructured
	for _, gvk := range installedKinds {
		objs, err := listInstalled(ctx, c, gvk)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			uid := obj.GetUID()
			err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy("Background"))
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %s %s: %w", gvk.Kind, client.ObjectKeyFromObject(obj), err)
			}
			report(gvk.Kind, client.ObjectKeyFromObject(obj).String())
			deleted = append(deleted, obj)
		}
	}
	if !wait {
		return nil
	}
	return waitGone(ctx, c, deleted, timeout)
}

func listInstalled(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) ([]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list, client.MatchingLabels{ManagedByLabel: ManagedBy}); err != nil {
		return nil, fmt.Errorf("list %s labelled %s=%s: %w", gvk.Kind, ManagedByLabel, ManagedBy, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

func waitGone(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, timeout time.Duration) error {
	var left []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		left = left[:0]
		for _, obj := range objs {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(obj.GroupVersionKind())
			err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur)
			if apierrors.IsNotFound(err) || (err == nil && cur.GetUID() != obj.GetUID()) {
				continue
			}
			left = append(left, obj.GetKind()+" "+client.ObjectKeyFromObject(obj).String())
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return errors.Join(fmt.Errorf("still present after %s: %s", timeout, strings.Join(left, ", ")), err)
	}
	return nil
}
