package addons_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/addons"
	"hypershift.dev/internal/testenv"
)

// TestManagementPhasesActAsTheNamespacesServiceAccount: an addon author
// gets no more in the management cluster than its namespace granted
// ServiceAccount hypershift-addons. Without that account's grant nothing is
// applied, and the hold names the account and the fix; with a grant on
// ConfigMaps alone a ConfigMap is applied and a Secret is refused. Whatever
// the grant and collisionProtection say, the operator never applies a
// HostedControlPlane or a Pod there, never takes over a Secret or an object
// of hypershift's own, and never applies an ObjectSet changed after it was
// made from the template.
func TestManagementPhasesActAsTheNamespacesServiceAccount(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	admin := env.Client
	const ns = "team-a"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	r := &addons.Reconciler{
		Client:     admin,
		Management: addons.ImpersonatingClients(env.RESTConfig, client.Options{Scheme: admin.Scheme(), Mapper: admin.RESTMapper()}),
	}
	deploy := func(name string, objs ...hypershiftv1alpha1.ObjectSetObject) {
		t.Helper()
		od := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		od.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{{Name: "deploy", Objects: objs}}
		if err := admin.Create(ctx, od); err != nil {
			t.Fatal(err)
		}
	}
	// holds passes od name until it is held with reason (saying says), or
	// with reason "" until nothing holds it.
	holds := func(name, reason string, says ...string) {
		t.Helper()
		key := client.ObjectKey{Namespace: ns, Name: name}
		testenv.Eventually(t, 30*time.Second, name+" held with "+reason, func() (bool, error) {
			if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				return false, err
			}
			od := &hypershiftv1alpha1.ObjectDeployment{}
			if err := admin.Get(ctx, key, od); err != nil {
				return false, err
			}
			h := od.Status.Holding
			if reason == "" || h == nil || h.Reason != reason {
				return reason == "" && h == nil && len(od.Status.Conditions) > 0, nil
			}
			for _, s := range says {
				if !strings.Contains(h.Message, s) {
					t.Fatalf("%s: hold %q lacks %q", name, h.Message, s)
				}
			}
			return true, nil
		})
	}
	absent := func(obj client.Object) {
		t.Helper()
		if err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err == nil && obj.GetLabels()[addons.OwnerUIDLabel] != "" {
			t.Errorf("%T %s was applied", obj, obj.GetName())
		}
	}
	configMap := func(name string) hypershiftv1alpha1.ObjectSetObject {
		return obj("v1", "ConfigMap", "", name, map[string]any{"data": map[string]any{"k": "v"}})
	}

	deploy("config", configMap("config"))
	holds("config", string(hypershiftv1alpha1.AddonApplyFailedReason), "ServiceAccount team-a/hypershift-addons", "create rolebinding")
	absent(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "config"}})

	// The namespace grants its account ConfigMaps, and nothing else.
	if err := admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addons"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "patch", "delete"}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "addons"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "addons"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: addons.ServiceAccountName}},
	}); err != nil {
		t.Fatal(err)
	}
	holds("config", "")
	cm := &corev1.ConfigMap{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config"}, cm); err != nil || cm.Labels[addons.OwnerUIDLabel] == "" {
		t.Fatalf("the granted ConfigMap: %v, labels %v", err, cm.Labels)
	}
	deploy("secret", obj("v1", "Secret", "", "token", map[string]any{"stringData": map[string]any{"k": "v"}}))
	holds("secret", string(hypershiftv1alpha1.AddonApplyFailedReason), "ServiceAccount team-a/hypershift-addons")
	absent(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"}})

	// Kinds the operator never applies on the management side.
	deploy("plane", obj("hypershift.dev/v1alpha1", "HostedControlPlane", "", "taken", nil))
	holds("plane", string(hypershiftv1alpha1.AddonUnsupportedReason), "holds only these kinds")
	deploy("pod", obj("v1", "Pod", "", "root", map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name": "c", "image": "example.com/root", "securityContext": map[string]any{"privileged": true},
	}}}}))
	holds("pod", string(hypershiftv1alpha1.AddonUnsupportedReason), "holds only these kinds")

	// Objects that are not the addon's are never taken over.
	if err := admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plane-config", Labels: map[string]string{"hypershift.dev/hostedcluster-uid": "0000"}}}); err != nil {
		t.Fatal(err)
	}
	takeover := configMap("plane-config")
	takeover.CollisionProtection = hypershiftv1alpha1.CollisionNone
	deploy("takeover", takeover)
	holds("takeover", string(hypershiftv1alpha1.AddonCollisionReason), "hypershift's own label")
	if err := admin.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubeconfig"}}); err != nil {
		t.Fatal(err)
	}
	// Even with Secrets granted.
	role := &rbacv1.Role{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addons"}, role); err != nil {
		t.Fatal(err)
	}
	role.Rules[0].Resources = append(role.Rules[0].Resources, "secrets")
	if err := admin.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	secret := obj("v1", "Secret", "", "kubeconfig", map[string]any{"stringData": map[string]any{"kubeconfig": "mine"}})
	secret.CollisionProtection = hypershiftv1alpha1.CollisionNone
	deploy("adopt", secret)
	holds("adopt", string(hypershiftv1alpha1.AddonCollisionReason), "no ObjectDeployment owns it")

	// An ObjectSet changed after it was made is not applied.
	set := &hypershiftv1alpha1.ObjectSet{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "config-1"}, set); err != nil {
		t.Fatal(err)
	}
	set.Spec.Phases[0].Objects = append(set.Spec.Phases[0].Objects, configMap("injected"))
	if err := admin.Update(ctx, set); err != nil {
		t.Fatal(err)
	}
	holds("config", string(hypershiftv1alpha1.AddonRevisionChangedReason), "config-1", "changed after it was made")
	absent(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "injected"}})
}
