package pki

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestSecretStoreAddsKonnectivityToAnExistingCluster: the Secrets of a
// cluster made before the Konnectivity tunnel are kept, and the three new
// key pairs are added as labeled kubernetes.io/tls Secrets.
func TestSecretStoreAddsKonnectivityToAnExistingCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	labels := map[string]string{"cluster": "a"}
	store := SecretStore{Ctx: t.Context(), Client: c, Namespace: "clusters-a", Labels: labels}
	first, err := EnsureControlPlane(store, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{KonnectivityCAName, KonnectivityServerName, KonnectivityAgentName} {
		secret := &corev1.Secret{}
		secret.Namespace, secret.Name = "clusters-a", name
		if err := c.Delete(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
	}
	second, err := EnsureControlPlane(store, ControlPlaneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(first.RootCA.KeyPEM) != string(second.RootCA.KeyPEM) || string(first.Admin.CertPEM) != string(second.Admin.CertPEM) {
		t.Error("the cluster's existing key pairs were replaced")
	}
	for _, name := range []string{KonnectivityCAName, KonnectivityServerName, KonnectivityAgentName} {
		secret := &corev1.Secret{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "clusters-a", Name: name}, secret); err != nil {
			t.Fatalf("%s not added: %v", name, err)
		}
		if secret.Type != corev1.SecretTypeTLS || secret.Labels["cluster"] != "a" || len(secret.Data[corev1.TLSPrivateKeyKey]) == 0 {
			t.Errorf("%s: type %s, labels %v", name, secret.Type, secret.Labels)
		}
	}
}
