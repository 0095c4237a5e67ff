package clusterclient

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Get reads the hosted cluster key; one that is not there is NotFound's
// error.
func Get(ctx context.Context, c client.Client, key client.ObjectKey) (*hypershiftv1alpha1.HostedCluster, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := c.Get(ctx, key, hc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, NotFound(key)
		}
		return nil, err
	}
	return hc, nil
}

// NotFound is the error for a hosted cluster key that is not there.
func NotFound(key client.ObjectKey) error {
	return fmt.Errorf("hosted cluster %s not found: list clusters with `hypershift get clusters`", key)
}

// ValidateAll has the API server check the HostedCluster and NodePool
// (a server-side dry run: schema, CEL rules, admission) before either is
// created, so that a bad flag leaves no half-made cluster behind. The
// namespace must exist for that; when this call creates it and validation
// fails, it removes it again.
func ValidateAll(ctx context.Context, c client.Client, ns *corev1.Namespace, objs ...client.Object) error {
	createdNS := false
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{}); apierrors.IsNotFound(err) {
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns.Name, err)
		}
		createdNS = true
	} else if err != nil {
		return fmt.Errorf("read namespace %s: %w", ns.Name, err)
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj.DeepCopyObject().(client.Object), client.DryRunAll); err != nil {
			if createdNS {
				_ = c.Delete(ctx, ns)
			}
			if apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s %s/%s already exists: choose another --name, or remove it with `hypershift destroy cluster --name %s`",
					strings.ToLower(obj.GetObjectKind().GroupVersionKind().Kind), obj.GetNamespace(), obj.GetName(), obj.GetName())
			}
			return err
		}
	}
	return nil
}

// AdminKubeconfig is the admin kubeconfig the operator publishes beside
// the HostedCluster key (status.kubeconfig).
func AdminKubeconfig(ctx context.Context, c client.Client, key client.ObjectKey) ([]byte, error) {
	hc, err := Get(ctx, c, key)
	if err != nil {
		return nil, err
	}
	ref := hc.Status.KubeConfig
	if ref == nil {
		return nil, fmt.Errorf("hosted cluster %s has no kubeconfig yet: wait with `hypershift create cluster ... --wait`, or see `hypershift describe cluster %s`", key, key.Name)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: ref.Name}, secret); err != nil {
		return nil, fmt.Errorf("read kubeconfig secret %s/%s: %w", key.Namespace, ref.Name, err)
	}
	return secret.Data[ref.Key], nil
}
