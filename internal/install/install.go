// Package install puts hypershift into a management cluster: the
// hypershift.dev CRDs, the admission policies that validate what a CRD's own
// rules cannot see (the namespace, the runtime that will run the cluster)
// and, for the kube runtime, the operator that runs control planes as pods.
package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"hypershift.dev/config/crd"
)

// CRDs returns the embedded CustomResourceDefinitions.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		data, err := crd.Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		obj := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			return nil, fmt.Errorf("decode %s: %w", f, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// Objects returns the objects `hypershift up` installs: the API and the
// policies of the process runtime, for the compiled-in version.
func Objects() ([]client.Object, error) {
	return APIObjects(RuntimeProcess, nil, "")
}

// APIObjects returns the API for a runtime that runs versions (nil: the
// compiled-in one): the CRDs, then the admission policies (namespace
// length, what the runtime can run, version skew, HostedControlPlanes
// kept to the operator, which on the kube runtime runs in namespace: ""
// is DefaultNamespace).
func APIObjects(runtime string, versions []string, namespace string) ([]client.Object, error) {
	return ObjectsFor(Options{Runtime: runtime, Versions: versions, Namespace: namespace, apiOnly: true})
}

// ObjectsFor returns everything the management cluster gets for opts, in
// the order it is applied: CRDs (for the kube runtime Cluster API's too,
// when opts.ClusterAPIDir exists), admission policies, then for the kube
// runtime the policy that keeps the operator's writes to control-plane
// namespaces, the operator's namespace, identity, RBAC, PriorityClass and
// Deployment, and Cluster API's manager with its identity and RBAC. Every
// object carries the ManagedByLabel.
func ObjectsFor(opts Options) ([]client.Object, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	withOperator := opts.Runtime == RuntimeKube && !opts.apiOnly
	var clusterAPI []client.Object
	if withOperator {
		if clusterAPI, err = clusterAPICRDs(opts); err != nil {
			return nil, err
		}
	}
	objs := make([]client.Object, 0, len(crds)+len(clusterAPI)+24)
	for _, c := range crds {
		objs = append(objs, c)
	}
	objs = append(objs, clusterAPI...)
	policy, binding := namespaceLengthPolicy()
	objs = append(objs, policy, binding)
	policy, binding = nodeReleasePolicy(opts.Runtime, opts.Versions)
	objs = append(objs, policy, binding)
	policy, binding = nodePoolSkewPolicy()
	objs = append(objs, policy, binding)
	policy, binding = controlPlaneSkewPolicy()
	objs = append(objs, policy, binding)
	operatorUser := ""
	if opts.Runtime == RuntimeKube {
		operatorUser = "system:serviceaccount:" + opts.Namespace + ":" + OperatorName
	}
	policy, binding = controlPlanePolicy(operatorUser)
	objs = append(objs, policy, binding)
	// Last: WaitPoliciesEnforced probes it to know that every policy
	// before it is in force too.
	policy, binding = runtimePolicy(opts.Runtime, opts.Versions)
	objs = append(objs, policy, binding)
	if withOperator {
		policy, binding = operatorScopePolicy(operatorUser, opts.AWSProviderNamespace)
		objs = append(objs, policy, binding)
		objs = append(objs, operatorObjects(opts)...)
		if len(clusterAPI) > 0 {
			objs = append(objs, clusterAPIObjects(opts)...)
		}
	}
	for _, obj := range objs {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ManagedByLabel] = ManagedBy
		obj.SetLabels(labels)
	}
	return objs, nil
}

// Install creates or updates the objects of `hypershift up` and waits
// until the CRDs are served.
func Install(ctx context.Context, c client.Client) error {
	return API(ctx, c, RuntimeProcess, nil, "")
}

// API creates or updates the API objects of a runtime that runs versions
// (APIObjects) and waits until the CRDs are served. The policies come
// after the CRDs are served: those with a paramKind need its resource.
// Whoever may create HostedClusters then waits for the policies with
// WaitPoliciesEnforced (`up`, `install`); the operator, which may not,
// re-applies what `install` applied and waited for.
func API(ctx context.Context, c client.Client, runtime string, versions []string, namespace string) error {
	objs, err := APIObjects(runtime, versions, namespace)
	if err != nil {
		return err
	}
	var rest []client.Object
	for _, obj := range objs {
		if _, ok := obj.(*apiextensionsv1.CustomResourceDefinition); !ok {
			rest = append(rest, obj)
			continue
		}
		if err := createOrReplace(ctx, c, obj); err != nil {
			return err
		}
	}
	if err := WaitCRDs(ctx, c, objs); err != nil {
		return err
	}
	for _, obj := range rest {
		if err := createOrReplace(ctx, c, obj); err != nil {
			return err
		}
	}
	return nil
}

// WaitCRDs waits until every CRD among objs is established and served.
func WaitCRDs(ctx context.Context, c client.Client, objs []client.Object) error {
	for _, obj := range objs {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			if err := waitEstablished(ctx, c, obj.GetName()); err != nil {
				return fmt.Errorf("CustomResourceDefinition %s is not established: %w", obj.GetName(), err)
			}
			if err := waitServed(ctx, c, crd); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitServed waits until the API server lists the CRD's kind: Established
// comes a moment before discovery shows it, and a controller started in that
// moment fails with "no matches for kind".
func waitServed(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	version := ""
	for _, v := range crd.Spec.Versions {
		if v.Served && (version == "" || v.Storage) {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.ListKind})
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		lastErr = c.List(ctx, list, client.Limit(1))
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s is not served: %w", crd.Name, errors.Join(err, lastErr))
	}
	return nil
}

func createOrReplace(ctx context.Context, c client.Client, obj client.Object) error {
	desired := obj.DeepCopyObject().(client.Object)
	err := c.Create(ctx, desired)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s: %w", obj.GetName(), err)
	}
	current := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return fmt.Errorf("get %s: %w", obj.GetName(), err)
	}
	desired = obj.DeepCopyObject().(client.Object)
	desired.SetResourceVersion(current.GetResourceVersion())
	if err := c.Update(ctx, desired); err != nil {
		return fmt.Errorf("update %s: %w", obj.GetName(), err)
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		obj := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
			return false, nil //nolint:nilerr // retried until the timeout
		}
		for _, cond := range obj.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func ptr[T any](v T) *T { return &v }
