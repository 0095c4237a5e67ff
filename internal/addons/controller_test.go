package addons_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/addons"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

const cpNS = "clusters-a"

func obj(apiVersion, kind, ns, name string, fields map[string]any) hypershiftv1alpha1.ObjectSetObject {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
	if ns != "" {
		o["metadata"].(map[string]any)["namespace"] = ns
	}
	for k, v := range fields {
		o[k] = v
	}
	return hypershiftv1alpha1.ObjectSetObject{Object: unstructured.Unstructured{Object: o}}
}

// seedAddon is seed 001's example: RBAC in the hosted cluster, an operator
// next to the control plane, configuration in the hosted cluster. Its
// operator-config is gated by a probe until ready is "yes".
func seedAddon(ready string) *hypershiftv1alpha1.ObjectDeployment {
	od := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "extra"}}
	od.Spec.Template.Spec = hypershiftv1alpha1.ObjectSetTemplateSpec{
		Phases: []hypershiftv1alpha1.ObjectSetTemplatePhase{
			{Name: "rbac", Class: hypershiftv1alpha1.HostedClusterPhaseClass, Objects: []hypershiftv1alpha1.ObjectSetObject{
				obj("v1", "Namespace", "", "extra", nil),
				obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "extra-reader", map[string]any{"rules": []any{map[string]any{
					"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"},
				}}}),
				obj("rbac.authorization.k8s.io/v1", "RoleBinding", "extra", "extra-reader", map[string]any{
					"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "extra-reader"},
					"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "extra"}},
				}),
			}},
			{Name: "deploy", Objects: []hypershiftv1alpha1.ObjectSetObject{
				obj("v1", "ConfigMap", "", "operator-config", map[string]any{
					"metadata": map[string]any{"name": "operator-config", "labels": map[string]any{"gate": "true"}},
					"data":     map[string]any{"ready": ready},
				}),
				obj("apps/v1", "Deployment", "", "extra-operator", map[string]any{"spec": map[string]any{
					"selector": map[string]any{"matchLabels": map[string]any{"app": "extra"}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": "extra"}},
						"spec":     map[string]any{"containers": []any{map[string]any{"name": "op", "image": "hypershift.dev/extra:1"}}},
					},
				}}),
			}},
			{Name: "configure", Class: hypershiftv1alpha1.HostedClusterPhaseClass, Objects: []hypershiftv1alpha1.ObjectSetObject{
				obj("v1", "ConfigMap", "extra", "extra-config", map[string]any{"data": map[string]any{"level": "debug"}}),
			}},
		},
		AvailabilityProbes: []hypershiftv1alpha1.ObjectSetProbe{{
			Probes: []hypershiftv1alpha1.Probe{{CEL: &hypershiftv1alpha1.ProbeCELSpec{Rule: `self.data.ready == "yes"`, Message: "operator-config is not ready"}}},
			Selector: hypershiftv1alpha1.ProbeSelector{
				Kind:     hypershiftv1alpha1.PackageProbeKindSpec{Kind: "ConfigMap"},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gate": "true"}},
			},
		}},
	}
	return od
}

// hostedPlane gives namespace cpNS of mgmt a HostedControlPlane whose
// admin kubeconfig is hosted's.
func hostedPlane(t *testing.T, mgmt, hosted *testenv.Env) {
	t.Helper()
	ctx := t.Context()
	if err := mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNS}}); err != nil {
		t.Fatal(err)
	}
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	hcp := &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "a"},
		Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
			KubernetesVersion: hc.Spec.KubernetesVersion, Networking: hc.Spec.Networking, Etcd: hc.Spec.Etcd, Platform: hc.Spec.Platform,
		},
	}
	if err := mgmt.Client.Create(ctx, hcp); err != nil {
		t.Fatal(err)
	}
	cfg := hosted.RESTConfig
	certPEM, err := os.ReadFile(cfg.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := os.ReadFile(cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kubeconfig.Render(kubeconfig.Params{Name: "admin", Server: cfg.Host, CAPEM: cfg.CAData, ClientPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: addons.AdminKubeconfigSecret},
		Data:       map[string][]byte{addons.KubeconfigKey: kc},
	}); err != nil {
		t.Fatal(err)
	}
}

// reconcileUntil runs passes of r over od until cond holds.
func reconcileUntil(t *testing.T, r *addons.Reconciler, what string, cond func(od *hypershiftv1alpha1.ObjectDeployment) (bool, error)) {
	t.Helper()
	key := client.ObjectKey{Namespace: cpNS, Name: "extra"}
	testenv.Eventually(t, 30*time.Second, what, func() (bool, error) {
		if _, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			return false, err
		}
		od := &hypershiftv1alpha1.ObjectDeployment{}
		if err := r.Client.Get(context.Background(), key, od); err != nil {
			if apierrors.IsNotFound(err) {
				return cond(nil)
			}
			return false, err
		}
		ok, err := cond(od)
		if !ok && err == nil {
			err = fmt.Errorf("status: holding %+v, conditions %+v", od.Status.Holding, od.Status.Conditions)
		}
		return ok, err
	})
}

func exists(t *testing.T, c client.Client, o client.Object) bool {
	t.Helper()
	err := c.Get(t.Context(), client.ObjectKeyFromObject(o), o)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil && o.GetDeletionTimestamp() == nil
}

// TestObjectDeploymentAcrossClusters runs the controller against two real
// API servers: the management plane and one standing in for the hosted
// cluster of cpNS.
func TestObjectDeploymentAcrossClusters(t *testing.T) {
	mgmt, hosted := testenv.Start(t), testenv.Start(t)
	hostedPlane(t, mgmt, hosted)
	ctx := t.Context()
	r := &addons.Reconciler{Client: mgmt.Client, RunsPods: false}
	hc := hosted.Client

	od := seedAddon("no")
	if err := mgmt.Client.Create(ctx, od); err != nil {
		t.Fatal(err)
	}

	// The probe on operator-config never passes: phases 1 and 2 are
	// applied, phase 3 is not, and the status names the holder.
	reconcileUntil(t, r, "phase deploy holds the rollout", func(od *hypershiftv1alpha1.ObjectDeployment) (bool, error) {
		h := od.Status.Holding
		return h != nil && h.Phase == "deploy", nil
	})
	got := &hypershiftv1alpha1.ObjectDeployment{}
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(od), got); err != nil {
		t.Fatal(err)
	}
	h := got.Status.Holding
	if h.Reason != string(hypershiftv1alpha1.AddonProbeFailedReason) || !strings.Contains(h.Object, "ConfigMap clusters-a/operator-config") || !strings.Contains(h.Message, "operator-config is not ready") {
		t.Fatalf("holding = %+v, want the probe of ConfigMap clusters-a/operator-config", h)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, string(hypershiftv1alpha1.AddonAvailable)); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("Available = %+v, want False", c)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, string(addons.PodsRunnable)); c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "runs no pods") || !strings.Contains(c.Message, "Deployment clusters-a/extra-operator") {
		t.Fatalf("PodsRunnable = %+v, want False naming the Deployment", c)
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "extra"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "extra-reader"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "extra", Name: "extra-reader"}},
	} {
		if !exists(t, hc, o) {
			t.Fatalf("phase rbac: %T %s is not in the hosted cluster", o, o.GetName())
		}
		if o.GetLabels()[addons.OwnerUIDLabel] != string(got.UID) {
			t.Fatalf("%T %s lacks the owner label", o, o.GetName())
		}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "extra-operator"}}
	if !exists(t, mgmt.Client, dep) {
		t.Fatal("phase deploy: the Deployment is not in the control-plane namespace")
	}
	if m := dep.ManagedFields; len(m) == 0 || m[0].Manager != addons.FieldManager {
		t.Fatalf("the Deployment's field manager is %+v, want %s", m, addons.FieldManager)
	}
	if exists(t, hc, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "extra", Name: "extra-config"}}) {
		t.Fatal("phase configure was applied while phase deploy is not available")
	}

	t.Run("connector credentials reach only what the addon declared", func(t *testing.T) {
		secret := &corev1.Secret{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: cpNS, Name: addons.ConnectorSecretName(od)}, secret); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[addons.KubeconfigKey])
		if err != nil {
			t.Fatal(err)
		}
		if cfg.CertData != nil || cfg.BearerToken == "" {
			t.Fatal("the connector kubeconfig is not a token of its own")
		}
		conn, err := client.New(cfg, client.Options{Scheme: scheme.New()})
		if err != nil {
			t.Fatal(err)
		}
		undeclared := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "undeclared"}, StringData: map[string]string{"k": "v"}}
		if err := hc.Create(ctx, undeclared); err != nil {
			t.Fatal(err)
		}
		inAddonNS := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "extra", Name: "undeclared"}, StringData: map[string]string{"k": "v"}}
		if err := hc.Create(ctx, inAddonNS); err != nil {
			t.Fatal(err)
		}
		for _, s := range []client.Object{undeclared, inAddonNS} {
			err := conn.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("the connector read Secret %s/%s the addon did not declare: err = %v", s.GetNamespace(), s.GetName(), err)
			}
		}
		if err := conn.List(ctx, &corev1.SecretList{}, client.InNamespace("extra")); !apierrors.IsForbidden(err) {
			t.Fatalf("the connector listed Secrets: err = %v", err)
		}
		// What it declared it may read.
		if err := conn.Get(ctx, client.ObjectKey{Name: "extra"}, &corev1.Namespace{}); err != nil {
			t.Fatalf("the connector cannot read its own Namespace: %v", err)
		}
	})

	t.Run("the connector's token is renewed a third before it ends", func(t *testing.T) {
		key := client.ObjectKey{Namespace: cpNS, Name: addons.ConnectorSecretName(od)}
		token := func() (string, time.Time) {
			secret := &corev1.Secret{}
			if err := mgmt.Client.Get(ctx, key, secret); err != nil {
				t.Fatal(err)
			}
			at, err := time.Parse(time.RFC3339, secret.Annotations[addons.TokenExpiryAnnotation])
			if err != nil {
				t.Fatal(err)
			}
			return string(secret.Data[addons.KubeconfigKey]), at
		}
		pass := func() {
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(od)}); err != nil {
				t.Fatal(err)
			}
		}
		before, expiry := token()
		pass()
		if now, _ := token(); now != before {
			t.Fatal("the token was renewed with most of its life left")
		}
		// 10 minutes before its end: renewed.
		r.Clock = func() time.Time { return expiry.Add(-10 * time.Minute) }
		defer func() { r.Clock = nil }()
		pass()
		if now, _ := token(); now == before {
			t.Fatalf("the token expiring at %s was not renewed 10 minutes before its end", expiry)
		}
	})

	// Revision 2: operator-config is ready, and phase rbac drops the
	// ClusterRole and its binding.
	next := seedAddon("yes")
	next.Spec.Template.Spec.Phases[0].Objects = next.Spec.Template.Spec.Phases[0].Objects[:1]
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(od), od); err != nil {
		t.Fatal(err)
	}
	od.Spec.Template = next.Spec.Template
	if err := mgmt.Client.Update(ctx, od); err != nil {
		t.Fatal(err)
	}
	reconcileUntil(t, r, "revision 2 available and revision 1 archived", func(od *hypershiftv1alpha1.ObjectDeployment) (bool, error) {
		set := &hypershiftv1alpha1.ObjectSet{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: cpNS, Name: "extra-1"}, set); err != nil {
			return false, err
		}
		return od.Status.Revision == 2 && meta.IsStatusConditionTrue(od.Status.Conditions, string(hypershiftv1alpha1.AddonAvailable)) &&
			set.Spec.LifecycleState == hypershiftv1alpha1.ObjectSetArchived, nil
	})
	if !exists(t, hc, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "extra", Name: "extra-config"}}) {
		t.Fatal("phase configure of revision 2 is not applied")
	}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "extra-reader"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "extra", Name: "extra-reader"}},
	} {
		if exists(t, hc, o) {
			t.Fatalf("%T %s, dropped by revision 2, is still there", o, o.GetName())
		}
	}

	t.Run("another ObjectDeployment's object is never taken over", func(t *testing.T) {
		other := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "other"}}
		other.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{{Name: "take", Objects: []hypershiftv1alpha1.ObjectSetObject{
			obj("v1", "ConfigMap", "", "operator-config", map[string]any{"data": map[string]any{"ready": "stolen"}}),
		}}}
		other.Spec.Template.Spec.Phases[0].Objects[0].CollisionProtection = hypershiftv1alpha1.CollisionIfNoController
		if err := mgmt.Client.Create(ctx, other); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(other)
		testenv.Eventually(t, time.Minute, "a collision", func() (bool, error) {
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				return false, err
			}
			if err := mgmt.Client.Get(ctx, key, other); err != nil {
				return false, err
			}
			h := other.Status.Holding
			return h != nil && h.Reason == string(hypershiftv1alpha1.AddonCollisionReason) && strings.Contains(h.Message, "clusters-a/extra"), nil
		})
		cm := &corev1.ConfigMap{}
		if err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: cpNS, Name: "operator-config"}, cm); err != nil {
			t.Fatal(err)
		}
		if cm.Data["ready"] != "yes" {
			t.Fatalf("the other ObjectDeployment changed the object: %v", cm.Data)
		}
		if err := mgmt.Client.Delete(ctx, other); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "the other ObjectDeployment gone", func() (bool, error) {
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				return false, err
			}
			return apierrors.IsNotFound(mgmt.Client.Get(ctx, key, other)), nil
		})
		if !exists(t, mgmt.Client, cm) {
			t.Fatal("deleting the other ObjectDeployment deleted an object it never owned")
		}
	})

	t.Run("a phase into a namespace an earlier phase made goes ahead in the same pass", func(t *testing.T) {
		fresh := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "fresh"}}
		fresh.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{
			{Name: "namespace", Class: hypershiftv1alpha1.HostedClusterPhaseClass, Objects: []hypershiftv1alpha1.ObjectSetObject{obj("v1", "Namespace", "", "fresh", nil)}},
			{Name: "config", Class: hypershiftv1alpha1.HostedClusterPhaseClass, Objects: []hypershiftv1alpha1.ObjectSetObject{obj("v1", "ConfigMap", "fresh", "c", nil)}},
		}
		if err := mgmt.Client.Create(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKeyFromObject(fresh)
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		if err := mgmt.Client.Get(ctx, key, fresh); err != nil {
			t.Fatal(err)
		}
		if !meta.IsStatusConditionTrue(fresh.Status.Conditions, string(hypershiftv1alpha1.AddonAvailable)) {
			t.Fatalf("one pass did not roll both phases out: holding %+v", fresh.Status.Holding)
		}
		if err := mgmt.Client.Delete(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "ObjectDeployment fresh gone", func() (bool, error) {
			if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: key}); err != nil {
				return false, err
			}
			return apierrors.IsNotFound(mgmt.Client.Get(ctx, key, fresh)), nil
		})
	})

	// Deletion removes everything on both sides, and the connector.
	if err := mgmt.Client.Delete(ctx, od); err != nil {
		t.Fatal(err)
	}
	reconcileUntil(t, r, "the ObjectDeployment gone", func(od *hypershiftv1alpha1.ObjectDeployment) (bool, error) {
		return od == nil, nil
	})
	for _, side := range []struct {
		c    client.Client
		objs []client.Object
	}{
		{hc, []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "extra"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "extra", Name: "extra-config"}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: addons.ConnectorNamespace, Name: addons.ConnectorName(od)}},
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: addons.ConnectorName(od)}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: addons.ConnectorName(od)}},
		}},
		{mgmt.Client, []client.Object{
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "operator-config"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: "extra-operator"}},
		}},
	} {
		for _, o := range side.objs {
			if exists(t, side.c, o) {
				t.Errorf("%T %s is left after deletion", o, client.ObjectKeyFromObject(o))
			}
		}
	}
}
