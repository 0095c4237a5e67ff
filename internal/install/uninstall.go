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

// HostedClusters returns "namespace/name" of every HostedCluster; none when
// the API is not installed.
func HostedClusters(ctx context.Context, c client.Client) ([]string, error) {
	list := &hypershiftv1alpha1.HostedClusterList{}
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("list HostedClusters: %w", err)
	}
	names := make([]string, 0, len(list.Items))
	for _, hc := range list.Items {
		names = append(names, hc.Namespace+"/"+hc.Name)
	}
	slices.Sort(names)
	return names, nil
}

// Uninstall deletes every object labelled ManagedByLabel=ManagedBy, CRDs
// last, and reports each; it refuses while HostedClusters exist, naming
// them, since their control planes would lose their operator and their
// objects with the CRDs. With wait it returns once all of them are gone.
func Uninstall(ctx context.Context, c client.Client, wait bool, timeout time.Duration, report func(kind, key string)) error {
	clusters, err := HostedClusters(ctx, c)
	if err != nil {
		return err
	}
	if len(clusters) > 0 {
		return fmt.Errorf("%d HostedClusters exist (%s): destroy them first (`hypershift destroy cluster --name NAME -n NAMESPACE`); nothing was removed",
			len(clusters), strings.Join(clusters, ", "))
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
