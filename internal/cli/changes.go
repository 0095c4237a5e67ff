package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// SetHibernation is `hypershift hibernate cluster` (enabled) and `hypershift
// resume cluster`: a merge patch of spec.hibernation.enabled. It returns
// the HostedCluster as patched; a missing cluster is the API's NotFound.
func SetHibernation(ctx context.Context, c client.Client, key client.ObjectKey, enabled bool) (*hypershiftv1alpha1.HostedCluster, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Namespace, hc.Name = key.Namespace, key.Name
	patch := fmt.Appendf(nil, `{"spec":{"hibernation":{"enabled":%t}}}`, enabled)
	if err := c.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return nil, err
	}
	return hc, nil
}

// RotateCA is `hypershift rotate ca`: it sets spec.certificates.rotateCA to
// token (default: the current UTC time), which starts a root-CA rotation,
// and returns the token. It refuses while a rotation runs and for a token
// rotated for already; a missing cluster is the API's NotFound.
func RotateCA(ctx context.Context, c client.Client, key client.ObjectKey, token string) (string, error) {
	return startRotation(ctx, c, key, token, "rotateCA", "its CAs", func(hc *hypershiftv1alpha1.HostedCluster) (string, string, bool) {
		st := CARotation(hc)
		if st == nil {
			return "", "", false
		}
		return st.Token, string(st.Phase), st.Phase != hypershiftv1alpha1.CARotationDone
	})
}

// RotateServiceAccountKey is `hypershift rotate service-account-key`, as
// RotateCA for spec.certificates.rotateServiceAccountKey.
func RotateServiceAccountKey(ctx context.Context, c client.Client, key client.ObjectKey, token string) (string, error) {
	return startRotation(ctx, c, key, token, "rotateServiceAccountKey", "its service-account key", func(hc *hypershiftv1alpha1.HostedCluster) (string, string, bool) {
		st := saKeyRotation(hc)
		if st == nil {
			return "", "", false
		}
		return st.Token, string(st.Phase), st.Phase != hypershiftv1alpha1.SAKeyDone
	})
}

// startRotation sets spec.certificates.FIELD to token (default: the
// current UTC time), refusing while the last rotation runs (last reports
// its token, its phase and whether it runs) and for a token it was
// rotated for already.
func startRotation(ctx context.Context, c client.Client, key client.ObjectKey, token, field, what string,
	last func(*hypershiftv1alpha1.HostedCluster) (string, string, bool),
) (string, error) {
	if token == "" {
		token = time.Now().UTC().Format("20060102T150405Z")
	}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := c.Get(ctx, key, hc); err != nil {
		return "", err
	}
	lastToken, phase, running := last(hc)
	if running {
		return "", fmt.Errorf("hosted cluster %s is rotating %s already (token %s, phase %s): wait for it with `hypershift describe cluster %s -n %s`", key, what, lastToken, phase, key.Name, key.Namespace)
	}
	if lastToken == token {
		return "", fmt.Errorf("--token %s was rotated for already: pick another token, or leave --token out", token)
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"certificates": map[string]any{field: token}}})
	if err != nil {
		return "", err
	}
	if err := c.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", fmt.Errorf("hosted cluster %s: %w", key, err)
	}
	return token, nil
}

// saKeyRotation is the cluster's service-account key rotation status, or
// nil.
func saKeyRotation(hc *hypershiftv1alpha1.HostedCluster) *hypershiftv1alpha1.ServiceAccountKeyRotationStatus {
	if hc.Status.Certificates == nil {
		return nil
	}
	return hc.Status.Certificates.ServiceAccountKeyRotation
}

// CARotation is the cluster's CA rotation status, or nil.
func CARotation(hc *hypershiftv1alpha1.HostedCluster) *hypershiftv1alpha1.CARotationStatus {
	if hc.Status.Certificates == nil {
		return nil
	}
	return hc.Status.Certificates.CARotation
}

// ScaleNodePool is `kubectl scale nodepool --replicas N`: a merge patch of
// the pool's scale subresource, so the authority it needs is
// nodepools/scale's, as kubectl's.
func ScaleNodePool(ctx context.Context, c client.Client, key client.ObjectKey, replicas int32) error {
	np := &hypershiftv1alpha1.NodePool{}
	np.Namespace, np.Name = key.Namespace, key.Name
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas)
	return c.SubResource("scale").Patch(ctx, np, client.RawPatch(types.MergePatchType, patch), client.WithSubResourceBody(&autoscalingv1.Scale{}))
}

// SetKubernetesVersion upgrades a control plane as docs/upgrades.md does
// with kubectl: a merge patch of spec.kubernetesVersion; the API server's
// rules refuse a version the installation cannot run or a skipped minor.
func SetKubernetesVersion(ctx context.Context, c client.Client, key client.ObjectKey, version string) (*hypershiftv1alpha1.HostedCluster, error) {
	hc := &hypershiftv1alpha1.HostedCluster{}
	hc.Namespace, hc.Name = key.Namespace, key.Name
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"kubernetesVersion": version}})
	if err != nil {
		return nil, err
	}
	if err := c.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return nil, err
	}
	return hc, nil
}
