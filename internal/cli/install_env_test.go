package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apimachineryruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// resourceVersions maps "Kind ns/name" of every object install makes to its
// resourceVersion in the cluster ("" when absent).
func resourceVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	objs, err := install.ObjectsFor(install.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, obj := range objs {
		gvk, err := apiutil.GVKForObject(obj, scheme.New())
		if err != nil {
			t.Fatal(err)
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(gvk)
		key := gvk.Kind + " " + client.ObjectKeyFromObject(obj).String()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
			if client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			out[key] = ""
			continue
		}
		if cur.GetLabels()[install.ManagedByLabel] != install.ManagedBy {
			t.Errorf("%s lacks the label %s=%s", key, install.ManagedByLabel, install.ManagedBy)
		}
		out[key] = cur.GetResourceVersion()
	}
	return out
}

// TestInstallUninstall: install makes every object and a second install
// changes none; uninstall refuses while a HostedCluster exists, naming it,
// and removes everything install made once it is gone. No pods run on
// this management plane, so install does not wait for the operator.
func TestInstallUninstall(t *testing.T) {
	env := testenv.Start(t)
	kubeconfig := datadir.Layout{Root: env.DataDir}.ManagementKubeconfig()
	args := []string{"--data-dir", t.TempDir(), "--kubeconfig", kubeconfig}

	// Bad flags: refused before anything is made.
	if _, err := run(t, append(args, "install", "--wait=false", "--namespace", "Bad_NS")...); err == nil || !strings.Contains(err.Error(), "--namespace") {
		t.Fatalf("install --namespace Bad_NS: %v, want an error naming --namespace", err)
	}
	// A namespace install did not make is not taken over (uninstall would
	// delete it with everything in it).
	taken := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "taken", Labels: map[string]string{"team": "other"}}}
	if err := env.Client.Create(t.Context(), taken); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, append(args, "install", "--wait=false", "--namespace", "taken")...); err == nil ||
		!strings.Contains(err.Error(), "Namespace taken exists and was not made by hypershift install") {
		t.Fatalf("install into a namespace it did not make: %v, want a refusal naming it", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(taken), taken); err != nil {
		t.Fatal(err)
	}
	if taken.Labels[install.ManagedByLabel] != "" || taken.Labels["pod-security.kubernetes.io/enforce"] != "" {
		t.Errorf("install changed the labels of a namespace it did not make: %v", taken.Labels)
	}
	for key, rv := range resourceVersions(t, env.Client) {
		// testenv installed the API and the policies as `up` does.
		if rv != "" && !strings.HasPrefix(key, "CustomResourceDefinition") && !strings.HasPrefix(key, "ValidatingAdmissionPolicy") {
			t.Errorf("%s exists after an install with bad flags", key)
		}
	}

	out, err := run(t, append(args, "install", "--wait=false")...)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	first := resourceVersions(t, env.Client)
	for key, rv := range first {
		if rv == "" {
			t.Errorf("install did not make %s", key)
		}
	}
	out, err = run(t, append(args, "install", "--wait=false")...)
	if err != nil {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	if n := strings.Count(out, " unchanged\n"); n != len(first) {
		t.Errorf("second install reported %d of %d objects unchanged:\n%s", n, len(first), out)
	}
	for key, rv := range resourceVersions(t, env.Client) {
		if rv != first[key] {
			t.Errorf("second install changed %s (resourceVersion %s -> %s)", key, first[key], rv)
		}
	}

	hc := hypershiftv1alpha1.NewHostedCluster("default", "keep-me", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	hc.Spec.Services = []hypershiftv1alpha1.ServicePublishingStrategyMapping{{
		Service: hypershiftv1alpha1.APIServer,
		ServicePublishingStrategy: hypershiftv1alpha1.ServicePublishingStrategy{
			Type: hypershiftv1alpha1.NodePort, NodePort: &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "192.0.2.10"},
		},
	}} // what the kube policy admits
	m, err := apimachineryruntime.DefaultUnstructuredConverter.ToUnstructured(hc)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &unstructured.Unstructured{Object: m}); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, append(args, "uninstall", "--timeout=2m")...)
	if err == nil || !strings.Contains(err.Error(), "HostedClusters exist (default/keep-me): destroy them first") {
		t.Fatalf("uninstall with a HostedCluster: %v, want a refusal naming default/keep-me", err)
	}
	for key, rv := range resourceVersions(t, env.Client) {
		if rv == "" {
			t.Errorf("refused uninstall removed %s", key)
		}
	}
	if err := env.Client.Delete(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	// A NodePool left without its cluster holds a finalizer too.
	np := &hypershiftv1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "orphan"},
		Spec:       hypershiftv1alpha1.NodePoolSpec{ClusterName: "keep-me", Platform: hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.NonePlatform}},
	}
	if err := env.Client.Create(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, append(args, "uninstall", "--timeout=2m")...); err == nil || !strings.Contains(err.Error(), "NodePools exist (default/orphan): destroy them first") {
		t.Fatalf("uninstall with a NodePool: %v, want a refusal naming default/orphan", err)
	}
	if err := env.Client.Delete(t.Context(), np); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, append(args, "uninstall", "--timeout=2m")...)
	if err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for key, rv := range resourceVersions(t, env.Client) {
		if rv != "" {
			t.Errorf("uninstall left %s", key)
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[len(lines)-1], "CustomResourceDefinition ") {
		t.Errorf("uninstall did not remove the CRDs last:\n%s", out)
	}
}
