package bootstrap

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterRoleBindings returns the node bootstrap bindings: token holders
// may create CSRs (kubeadm:kubelet-bootstrap) and nodes may have the
// renewal of their own client certificate approved by the hosted controller
// manager's csrapproving controller (…:node-autoapprove-certificate-rotation).
// Unlike kubeadm, token holders are not bound to the nodeclient role: the
// controller manager would approve any node name for any token, so the
// NodePool controller approves first client certificates itself, after
// checking the token's pool (CheckNodeClientCSR).
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	bind := func(name, role, group string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "hypershift"}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}
	}
	return []*rbacv1.ClusterRoleBinding{
		bind("hypershift:node-bootstrapper", "system:node-bootstrapper", BootstrappersGroup),
		bind("hypershift:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", NodesGroup),
	}
}

// retiredClusterRoleBindings were made by earlier versions and must go:
// node-autoapprove-bootstrap let the controller manager approve any node
// client CSR of any bootstrap token.
var retiredClusterRoleBindings = []string{"hypershift:node-autoapprove-bootstrap"}

// EnsureClusterRBAC creates or corrects the bootstrap ClusterRoleBindings
// and removes retired ones.
func EnsureClusterRBAC(ctx context.Context, c kubernetes.Interface) error {
	for _, b := range ClusterRoleBindings() {
		if err := EnsureClusterRoleBinding(ctx, c, b); err != nil {
			return err
		}
	}
	for _, name := range retiredClusterRoleBindings {
		if err := c.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete retired ClusterRoleBinding %s: %w", name, err)
		}
	}
	return nil
}

// EnsureClusterRoleBinding creates want, or replaces a binding of the same
// name whose role or subjects differ (a binding's role is immutable).
func EnsureClusterRoleBinding(ctx context.Context, c kubernetes.Interface, want *rbacv1.ClusterRoleBinding) error {
	api := c.RbacV1().ClusterRoleBindings()
	got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ClusterRoleBinding %s: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get ClusterRoleBinding %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(got.RoleRef, want.RoleRef) && equality.Semantic.DeepEqual(got.Subjects, want.Subjects) {
		return nil
	}
	if err := api.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replace ClusterRoleBinding %s: %w", want.Name, err)
	}
	if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", want.Name, err)
	}
	return nil
}
