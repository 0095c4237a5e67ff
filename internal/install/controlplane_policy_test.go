package install_test

import (
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestControlPlanesAreTheOperators: a namespace user granted every verb on
// HostedControlPlanes cannot create one, nor set, change or remove its
// hypershift.dev/ annotations (the restore, backup and fence requests the
// operator acts on with its own authority); it can change the rest. The
// operator — system:masters on the process runtime, its ServiceAccount on
// the kube runtime, not a namesake in another namespace — can.
func TestControlPlanesAreTheOperators(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	admin := env.Client
	const ns = "default"
	if err := admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hcp-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostedcontrolplanes"}, Verbs: []string{"*"}}},
	}); err != nil {
		t.Fatal(err)
	}
	users := []string{"tenant", "system:serviceaccount:ops:hypershift-operator", "system:serviceaccount:tenant:hypershift-operator"}
	var subjects []rbacv1.Subject
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, Name: u})
	}
	if err := admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hcp-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "hcp-writer"},
		Subjects:   subjects,
	}); err != nil {
		t.Fatal(err)
	}
	as := func(user string) client.Client { return actingAs(t, env, user) }
	hc := hypershiftv1alpha1.NewHostedCluster(ns, "a", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	hcp := func(name string) *hypershiftv1alpha1.HostedControlPlane {
		return &hypershiftv1alpha1.HostedControlPlane{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
				KubernetesVersion: hc.Spec.KubernetesVersion, Networking: hc.Spec.Networking, Etcd: hc.Spec.Etcd, Platform: hc.Spec.Platform,
			},
		}
	}
	refused := func(err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want a refusal saying %q", err, want)
		}
	}
	const notMade = "HostedControlPlanes are made by the hypershift operator from a HostedCluster"
	const notRequested = "the hypershift.dev/ annotations of a HostedControlPlane are set by the hypershift operator only"

	tenant := as("tenant")
	testenv.Eventually(t, time.Minute, "a tenant's HostedControlPlane refused", func() (bool, error) {
		err := tenant.Create(ctx, hcp("by-tenant"))
		if err == nil {
			_ = admin.Delete(ctx, hcp("by-tenant"))
		}
		return err != nil && strings.Contains(err.Error(), notMade), err
	})
	made := hcp("a")
	made.Annotations = map[string]string{hypershiftv1alpha1.FencedAnnotation: "true"}
	if err := admin.Create(ctx, made); err != nil {
		t.Fatalf("system:masters (the operator of up): %v", err)
	}
	update := func(c client.Client, change func(*hypershiftv1alpha1.HostedControlPlane)) error {
		cur := &hypershiftv1alpha1.HostedControlPlane{}
		if err := admin.Get(ctx, client.ObjectKeyFromObject(made), cur); err != nil {
			t.Fatal(err)
		}
		change(cur)
		return c.Update(ctx, cur)
	}
	refused(update(tenant, func(h *hypershiftv1alpha1.HostedControlPlane) {
		h.Annotations[hypershiftv1alpha1.RestoreFromAnnotation] = `{"url":"s3://b/a.bak","secret":"other/ns"}`
	}), notRequested)
	refused(update(tenant, func(h *hypershiftv1alpha1.HostedControlPlane) {
		h.Annotations[hypershiftv1alpha1.FencedAnnotation] = "false"
	}), notRequested)
	refused(update(tenant, func(h *hypershiftv1alpha1.HostedControlPlane) {
		delete(h.Annotations, hypershiftv1alpha1.FencedAnnotation)
	}), notRequested)
	if err := update(tenant, func(h *hypershiftv1alpha1.HostedControlPlane) {
		h.Annotations["example.com/note"] = "mine"
		h.Labels = map[string]string{"team": "a"}
	}); err != nil {
		t.Errorf("a tenant's own annotation and label: %v, want them admitted", err)
	}
	if err := update(admin, func(h *hypershiftv1alpha1.HostedControlPlane) {
		h.Annotations[hypershiftv1alpha1.BackupRequestAnnotation] = "r1"
	}); err != nil {
		t.Errorf("system:masters sets a request annotation: %v", err)
	}

	// The kube runtime's policy, for an operator in namespace ops.
	objs, err := install.APIObjects(install.RuntimeKube, nil, "ops")
	if err != nil {
		t.Fatal(err)
	}
	var policy []client.Object
	for _, obj := range objs {
		if obj.GetName() == install.ControlPlanePolicyName {
			policy = append(policy, obj)
		}
	}
	if len(policy) != 2 {
		t.Fatalf("%d objects named %s, want the policy and its binding", len(policy), install.ControlPlanePolicyName)
	}
	if err := install.Apply(ctx, admin, policy, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
	namesake := as("system:serviceaccount:tenant:hypershift-operator")
	testenv.Eventually(t, time.Minute, "the kube runtime's policy in force", func() (bool, error) {
		err := as("system:serviceaccount:ops:hypershift-operator").Create(ctx, hcp("by-operator"))
		return err == nil, err
	})
	refused(namesake.Create(ctx, hcp("by-namesake")), notMade)
	refused(update(namesake, func(h *hypershiftv1alpha1.HostedControlPlane) {
		h.Annotations[hypershiftv1alpha1.RestoreFromAnnotation] = "{}"
	}), notRequested)
}

// actingAs is a client of env's API server that acts as user (with the
// groups the API server gives a service account of that name).
func actingAs(t *testing.T, env *testenv.Env, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
