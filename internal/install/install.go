// Package install puts the hypershift.dev API into a management cluster: the
// CRDs and the admission policy that validates what a CRD's own rules
// cannot see (the namespace).
package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// Objects returns every object Install applies, CRDs first.
func Objects() ([]client.Object, error) {
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(crds)+2)
	for _, c := range crds {
		objs = append(objs, c)
	}
	policy, binding := namespaceLengthPolicy()
	return append(objs, policy, binding), nil
}

// Install creates or updates the API objects and waits until the CRDs are
// established.
func Install(ctx context.Context, c client.Client) error {
	objs, err := Objects()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := createOrReplace(ctx, c, obj); err != nil {
			return err
		}
	}
	for _, obj := range objs {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			if err := waitEstablished(ctx, c, obj.GetName()); err != nil {
				return err
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

// namespaceLengthPolicy rejects a HostedCluster whose control-plane namespace
// NAMESPACE-NAME would exceed 63 characters. A CRD's own CEL rules cannot
// see metadata.namespace; an admission policy can.
func namespaceLengthPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	const name = "hostedcluster-namespace-length.hypershift.dev"
	fail := admissionregistrationv1.Deny
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups:   []string{"hypershift.dev"},
							APIVersions: []string{"v1alpha1"},
							Resources:   []string{"hostedclusters"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "size(object.metadata.namespace) + 1 + size(object.metadata.name) <= 63",
				MessageExpression: "'metadata.name: the control-plane namespace ' + object.metadata.namespace + '-' + object.metadata.name + ' would be longer than 63 characters; use a shorter name or namespace'",
				Reason:            ptr(metav1.StatusReasonInvalid),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{fail},
		},
	}
	return policy, binding
}

func ptr[T any](v T) *T { return &v }
