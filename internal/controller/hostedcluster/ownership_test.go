package hostedcluster_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/hostedcluster"
	"hypershift.dev/internal/operator/operatortest"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// a/b-c and a-b/c both map to control-plane namespace a-b-c. The first
// keeps it; the second is refused with a condition naming the first, gets
// none of the first's credentials, and deleting it leaves the first whole.
func TestControlPlaneNamespaceCollision(t *testing.T) {
	env, root := operatortest.Setup(t, "a", "a-b")
	c := env.Client
	ctx := t.Context()

	first := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b-c"}}
	if err := c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	operatortest.WaitAvailable(t, c, first)
	rootCA := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a-b-c", Name: pki.RootCAName}, rootCA); err != nil {
		t.Fatal(err)
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a-b-c", Name: "b-c"}, hcp); err != nil {
		t.Fatal(err)
	}
	cpDir := filepath.Join(root, "a-b-c")

	second := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "a-b", Name: "c"}}
	if err := c.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	cond := waitRefused(t, c, second, hypershiftv1alpha1.ControlPlaneNamespaceConflictReason)
	for _, want := range []string{"a-b-c", "HostedCluster a/b-c", string(first.UID), "a-b/c"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("conflict message %q does not name %q", cond.Message, want)
		}
	}
	if avail := meta.FindStatusCondition(second.Status.Conditions, hypershiftv1alpha1.Available.String()); avail == nil ||
		avail.Status != metav1.ConditionFalse || avail.Reason != hypershiftv1alpha1.ControlPlaneNamespaceConflictReason.String() {
		t.Errorf("a-b/c Available: %+v", avail)
	}
	// Nothing is made for it, and none of a/b-c's credentials reach it.
	if second.Status.KubeConfig != nil || second.Status.ControlPlaneNamespace != "" {
		t.Errorf("a-b/c status kubeconfig %v, namespace %q", second.Status.KubeConfig, second.Status.ControlPlaneNamespace)
	}
	err := c.Get(ctx, client.ObjectKey{Namespace: "a-b", Name: hostedcluster.AdminKubeconfigSecretName(second)}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a-b/c has an admin kubeconfig Secret: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a-b-c", Name: "c"}, &hypershiftv1alpha1.HostedControlPlane{}); !apierrors.IsNotFound(err) {
		t.Errorf("a HostedControlPlane was made for a-b/c: %v", err)
	}
	checkOwnedBy(t, c, "a-b-c", first)

	// A HostedControlPlane made by hand beside the first's maps to the same
	// runtime directory: it is refused there, and deleting it stops nothing.
	rogue := &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: "a-b-c", Name: "c"},
		Spec:       hcp.Spec,
	}
	if err := c.Create(ctx, rogue); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the hand-made HostedControlPlane refused", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(rogue), rogue)
		cond = meta.FindStatusCondition(rogue.Status.Conditions, hypershiftv1alpha1.Degraded.String())
		return cond != nil && cond.Status == metav1.ConditionTrue && strings.Contains(cond.Message, string(hcp.UID)), err
	})
	if len(rogue.Status.Components) != 0 {
		t.Errorf("components run for the hand-made HostedControlPlane: %v", rogue.Status.Components)
	}
	if err := c.Delete(ctx, rogue); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the hand-made HostedControlPlane gone", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(rogue), rogue)
		return apierrors.IsNotFound(err), err
	})

	// Deleting the second completes and leaves the first whole.
	if err := c.Delete(ctx, second); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "a-b/c gone", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(second), second)
		return apierrors.IsNotFound(err), err
	})
	time.Sleep(2 * time.Second) // give a wrong deletion time to show
	checkOwnedBy(t, c, "a-b-c", first)
	after := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "a-b-c", Name: pki.RootCAName}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID != rootCA.UID || !bytes.Equal(after.Data[corev1.TLSCertKey], rootCA.Data[corev1.TLSCertKey]) {
		t.Error("a/b-c's root CA changed")
	}
	if got, err := os.ReadFile(filepath.Join(cpDir, process.OwnerFile)); err != nil || strings.TrimSpace(string(got)) != string(hcp.UID) {
		t.Errorf("runtime dir owner %q (%v), want a/b-c's HostedControlPlane %s", got, err, hcp.UID)
	}
	checkServes(t, c, first)

	// The first is deleted as before.
	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "a/b-c gone", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(first), first)
		return apierrors.IsNotFound(err), err
	})
	if err := c.Get(ctx, client.ObjectKey{Name: "a-b-c"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a-b-c still present after deleting its owner: %v", err)
	}
	if _, err := os.Stat(cpDir); !os.IsNotExist(err) {
		t.Errorf("runtime dir still present after deleting its owner: %v", err)
	}
}

// A namespace not made by hypershift is refused and survives the cluster's
// deletion. One made before UID labels for exactly this cluster is adopted,
// but a Secret in it that is not the cluster's — here a client CA whose key
// someone else knows — is never used to sign the cluster's certificates.
func TestForeignControlPlaneNamespaceIsRefused(t *testing.T) {
	env, _ := operatortest.Setup(t)
	c := env.Client
	ctx := t.Context()
	planted := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-foreign", Name: pki.RootCAName},
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("planted")},
	}
	attackerCA, err := pki.NewCA("attacker")
	if err != nil {
		t.Fatal(err)
	}
	plantedCA := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-legacy", Name: pki.ClientCAName},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: attackerCA.CertPEM, corev1.TLSPrivateKeyKey: attackerCA.KeyPEM},
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters-foreign"}},
		planted,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters-legacy", Labels: map[string]string{
			hostedcluster.ClusterNamespaceLabel: "clusters", hostedcluster.ClusterNameLabel: "legacy",
		}}},
		plantedCA,
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	foreign := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "foreign"}}
	legacy := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "legacy"}}
	for _, hc := range []*hypershiftv1alpha1.HostedCluster{foreign, legacy} {
		if err := c.Create(ctx, hc); err != nil {
			t.Fatal(err)
		}
	}

	cond := waitRefused(t, c, foreign, hypershiftv1alpha1.ControlPlaneNamespaceConflictReason)
	if !strings.Contains(cond.Message, "not created by hypershift") || !strings.Contains(cond.Message, "clusters-foreign") {
		t.Errorf("conflict message %q", cond.Message)
	}
	ns := &corev1.Namespace{}
	testenv.Eventually(t, time.Minute, "clusters-legacy adopted, enforcing the restricted Pod Security Standard", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: "clusters-legacy"}, ns)
		return ns.Labels[hostedcluster.ClusterUIDLabel] == string(legacy.UID) && ns.Labels["pod-security.kubernetes.io/enforce"] == "restricted", err
	})
	testenv.Eventually(t, time.Minute, "clusters/legacy refuses the planted client CA", func() (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(legacy), legacy)
		cond = meta.FindStatusCondition(legacy.Status.Conditions, hypershiftv1alpha1.Available.String())
		return cond != nil && cond.Reason == hypershiftv1alpha1.ControlPlaneNamespaceConflictReason.String(), err
	})
	if !strings.Contains(cond.Message, "Secret clusters-legacy/"+pki.ClientCAName) {
		t.Errorf("refusal message %q does not name the planted Secret", cond.Message)
	}
	for _, name := range []string{pki.AdminName, hostedcluster.AdminKubeconfigSecret} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters-legacy", Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("Secret %s made beside a planted client CA: %v", name, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "clusters-legacy", Name: "legacy"}, &hypershiftv1alpha1.HostedControlPlane{}); !apierrors.IsNotFound(err) {
		t.Errorf("a control plane runs with a planted client CA: %v", err)
	}

	for _, hc := range []*hypershiftv1alpha1.HostedCluster{foreign, legacy} {
		if err := c.Delete(ctx, hc); err != nil {
			t.Fatal(err)
		}
	}
	for _, hc := range []*hypershiftv1alpha1.HostedCluster{foreign, legacy} {
		testenv.Eventually(t, 2*time.Minute, hc.Name+" gone", func() (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(hc), hc)
			return apierrors.IsNotFound(err), err
		})
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters-foreign"}, ns); err != nil || !ns.DeletionTimestamp.IsZero() {
		t.Errorf("foreign namespace after deleting the cluster: %v, deleting %v", err, ns.DeletionTimestamp)
	}
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace("clusters-foreign")); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 1 || secrets.Items[0].UID != planted.UID || string(secrets.Items[0].Data[corev1.TLSCertKey]) != "planted" {
		t.Errorf("secrets in the foreign namespace: %d, want only the planted one untouched", len(secrets.Items))
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "clusters-legacy"}, ns); !apierrors.IsNotFound(err) {
		t.Errorf("adopted namespace still present after deleting its cluster: %v", err)
	}
}

// checkOwnedBy checks that a control-plane namespace and every Secret in it
// still carry hc's labels and are not being deleted.
func checkOwnedBy(t *testing.T, c client.Client, name string, hc *hypershiftv1alpha1.HostedCluster) {
	t.Helper()
	ctx := t.Context()
	want := map[string]string{
		hostedcluster.ClusterUIDLabel: string(hc.UID), hostedcluster.ClusterNameLabel: hc.Name, hostedcluster.ClusterNamespaceLabel: hc.Namespace,
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	if !ns.DeletionTimestamp.IsZero() {
		t.Errorf("namespace %s is being deleted", name)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s does not enforce the restricted Pod Security Standard: labels %v", name, ns.Labels)
	}
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(name)); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) == 0 {
		t.Errorf("no Secrets in %s", name)
	}
	for _, obj := range append([]metav1.ObjectMeta{ns.ObjectMeta}, objectMetas(secrets)...) {
		for k, v := range want {
			if obj.Labels[k] != v {
				t.Errorf("%s/%s label %s = %q, want %q", obj.Namespace, obj.Name, k, obj.Labels[k], v)
			}
		}
	}
}

func objectMetas(list *corev1.SecretList) []metav1.ObjectMeta {
	out := make([]metav1.ObjectMeta, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, s.ObjectMeta)
	}
	return out
}

// checkServes checks that hc's admin kubeconfig reaches its API server.
func checkServes(t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: hc.Namespace, Name: hostedcluster.AdminKubeconfigSecretName(hc)}, secret); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[hostedcluster.KubeconfigKey])
	if err != nil {
		t.Fatal(err)
	}
	hosted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hosted.Discovery().ServerVersion(); err != nil {
		t.Errorf("%s/%s no longer serves: %v", hc.Namespace, hc.Name, err)
	}
}
