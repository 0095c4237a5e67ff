package install

import (
	"bytes"
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apimachineryruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"hypershift.dev/internal/scheme"
)

// Result says what Apply did to one object.
type Result string

// Results.
const (
	Created    Result = "created"
	Configured Result = "configured"
	Unchanged  Result = "unchanged"
)

// payload is obj as it is applied and rendered: typed, with apiVersion and
// kind, without status or server-set metadata.
func payload(obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme.New())
	if err != nil {
		return nil, err
	}
	m, err := apimachineryruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	delete(u.Object, "status")
	if _, aggregated := u.Object["aggregationRule"]; aggregated && u.Object["rules"] == nil {
		// An aggregated ClusterRole's rules are the aggregation
		// controller's: applied as null, they would be taken from it and
		// emptied on every install.
		delete(u.Object, "rules")
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u, nil
}

// Render writes objs as YAML documents separated by "---", in order.
func Render(objs []client.Object) ([]byte, error) {
	var out bytes.Buffer
	for _, obj := range objs {
		u, err := payload(obj)
		if err != nil {
			return nil, err
		}
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(data)
	}
	return out.Bytes(), nil
}

// Apply server-side applies objs in order with the field owner
// FieldOwner, taking over fields others set, and reports each.
func Apply(ctx context.Context, c client.Client, objs []client.Object, report func(kind, key string, r Result)) error {
	for _, obj := range objs {
		u, err := payload(obj)
		if err != nil {
			return err
		}
		kind, key := u.GetKind(), client.ObjectKeyFromObject(u).String()
		if u.GetNamespace() == "" {
			key = u.GetName() // cluster-scoped
		}
		before := &metav1.PartialObjectMetadata{}
		before.SetGroupVersionKind(u.GroupVersionKind())
		err = c.Get(ctx, client.ObjectKeyFromObject(u), before)
		existed := err == nil
		switch {
		case err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
			return fmt.Errorf("read %s %s: %w", kind, key, err)
		case existed && before.GetLabels()[ManagedByLabel] != ManagedBy:
			// Not made by install: taking it over would let uninstall
			// delete it later (a namespace with its workloads, another
			// product's role).
			return fmt.Errorf("%s %s exists and was not made by hypershift install (no label %s=%s): nothing was changed; choose another --namespace, or remove it",
				kind, key, ManagedByLabel, ManagedBy)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			if meta.IsNoMatchError(err) {
				return fmt.Errorf("apply %s %s: the cluster does not serve %s (hypershift needs Kubernetes 1.30 or later): %w",
					kind, key, u.GetAPIVersion(), err)
			}
			return fmt.Errorf("apply %s %s: %w", kind, key, err)
		}
		switch {
		case !existed:
			report(kind, key, Created)
		case before.GetResourceVersion() != u.GetResourceVersion():
			report(kind, key, Configured)
		default:
			report(kind, key, Unchanged)
		}
	}
	return nil
}

// WaitOperator waits until every Deployment among objs — the operator's,
// and Cluster API's manager's — has as many available replicas as it
// wants, at its current generation, all within timeout.
func WaitOperator(ctx context.Context, c client.Client, objs []client.Object, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, obj := range objs {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		// seen is what the Deployment last reported; a read that fails
		// (often one the deadline cuts short) must not hide it.
		var seen, lastErr string
		err := wait.PollUntilContextTimeout(ctx, time.Second, time.Until(deadline), true, func(ctx context.Context) (bool, error) {
			cur := &appsv1.Deployment{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
				lastErr = err.Error()
				return false, nil
			}
			seen = fmt.Sprintf("%d of %d replicas available, %d updated", cur.Status.AvailableReplicas, ptrValue(cur.Spec.Replicas), cur.Status.UpdatedReplicas)
			for _, cond := range cur.Status.Conditions {
				if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionFalse {
					seen += ": " + cond.Message
				}
			}
			// Every replica of the current template, and only those:
			// during an upgrade the old pods alone are available too.
			want := ptrValue(cur.Spec.Replicas)
			return cur.Status.ObservedGeneration >= cur.Generation &&
				cur.Status.UpdatedReplicas >= want && cur.Status.Replicas == want &&
				cur.Status.AvailableReplicas >= want, nil
		})
		last := seen
		if last == "" {
			last = lastErr
		}
		if err != nil {
			what := "the operator Deployment"
			if d.Name == ClusterAPIName {
				what = "Cluster API's manager Deployment"
			}
			return fmt.Errorf("%s %s/%s is not available after %s (%s): see `kubectl -n %s describe deployment %s`; is the image %s on the nodes (docs/install.md)?",
				what, d.Namespace, d.Name, timeout, last, d.Namespace, d.Name, d.Spec.Template.Spec.Containers[0].Image)
		}
	}
	return nil
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
