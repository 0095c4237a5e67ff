package addons

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"hypershift.dev/internal/scheme"
)

// A pod in the control-plane namespace reaches the API server at its
// ClusterIP Service, never at a published one (node port, load balancer).
func TestServiceServer(t *testing.T) {
	svc := func(name string, typ corev1.ServiceType, port string) corev1.Service {
		return corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-a", Name: name},
			Spec:       corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Name: port, Port: 6443}}},
		}
	}
	for _, tc := range []struct {
		name string
		svcs []corev1.Service
		want string
	}{
		{"none: the process runtime", nil, ""},
		{"published only", []corev1.Service{svc("kube-apiserver-https-published", corev1.ServiceTypeNodePort, "https")}, ""},
		{"other port", []corev1.Service{svc("kube-apiserver", corev1.ServiceTypeClusterIP, "metrics")}, ""},
		{"in-cluster Service", []corev1.Service{
			svc("kube-apiserver-https-published", corev1.ServiceTypeLoadBalancer, "https"),
			svc("kube-apiserver", corev1.ServiceTypeClusterIP, "https"),
		}, "https://kube-apiserver.clusters-a.svc:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := serviceServer(tc.svcs); got != tc.want {
				t.Fatalf("serviceServer = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestConnectorLeavesForeignObjectsAlone: a ClusterRole of the connector's
// name that another owner (the tenant, another addon) made in the hosted
// cluster is refused, not taken over, and kept as it was; the connector's
// own is applied; a stale Role is removed only when it is the connector's.
func TestConnectorLeavesForeignObjectsAlone(t *testing.T) {
	owner := Owner{UID: "u1", Namespace: "clusters-a", Name: "extra"}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}
	foreign := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "addon-extra", Labels: map[string]string{OwnerUIDLabel: "u2"}}, Rules: rules}
	tenantRole := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "old", Name: "addon-extra", Labels: map[string]string{OwnerUIDLabel: "u1"}}}
	tenantBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "old", Name: "addon-extra"}} // no owner label: not the connector's
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(foreign, tenantRole, tenantBinding).Build()

	mine := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "addon-extra", Labels: map[string]string{OwnerUIDLabel: "u1"}}}
	err := applyConnectorObject(t.Context(), c, mine, owner)
	if err == nil || !strings.Contains(err.Error(), "ClusterRole addon-extra exists and is not this addon's connector's") {
		t.Fatalf("applying over another owner's ClusterRole: %v, want a refusal naming it", err)
	}
	got := &rbacv1.ClusterRole{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "addon-extra"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[OwnerUIDLabel] != "u2" || len(got.Rules) != 1 {
		t.Fatalf("the foreign ClusterRole changed: %+v", got)
	}

	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: "addon-extra", Labels: map[string]string{OwnerUIDLabel: "u1"}}
	}
	if err := reconcileConnectorRoles(t.Context(), c, "addon-extra", meta, nil, nil, owner); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(tenantRole), &rbacv1.Role{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the connector's stale Role in namespace old: %v, want it deleted", err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(tenantBinding), &rbacv1.RoleBinding{}); err != nil {
		t.Fatalf("a RoleBinding of the connector's name without its owner label was touched: %v", err)
	}
}
