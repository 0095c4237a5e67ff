package install_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apimachineryruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/testenv"
)

// catalog is the installation the test pretends to be: two releases.
var catalog = []string{"v1.37.1", "v1.36.3"}

func nodePool(ns, name, cluster, version string) *unstructured.Unstructured {
	spec := map[string]any{
		"clusterName": cluster,
		"replicas":    int64(0),
		"platform":    map[string]any{"type": "Simulated"},
	}
	if version != "" {
		spec["kubernetesVersion"] = version
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(hypershiftv1alpha1.GroupVersion.String())
	u.SetKind("NodePool")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func cluster(t *testing.T, ns, name, version string) *unstructured.Unstructured {
	t.Helper()
	hc := hypershiftv1alpha1.NewHostedCluster(ns, name, hypershiftv1alpha1.NonePlatform, version)
	m, err := apimachineryruntime.DefaultUnstructuredConverter.ToUnstructured(hc)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// setVersion changes obj's spec.kubernetesVersion and returns the update's
// error.
func setVersion(t *testing.T, c client.Client, obj *unstructured.Unstructured, version string) error {
	t.Helper()
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, version, "spec", "kubernetesVersion"); err != nil {
		t.Fatal(err)
	}
	return c.Update(t.Context(), cur)
}

// updateRefusedWith retries the update until the API server refuses it with
// want (a policy takes a moment to see new parameters), undoing an update
// admitted before that.
func updateRefusedWith(t *testing.T, c client.Client, obj *unstructured.Unstructured, from, to, want string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, obj.GetName()+" "+from+" -> "+to+" refused with "+want, func() (bool, error) {
		err := setVersion(t, c, obj, to)
		if err == nil {
			if err := setVersion(t, c, obj, from); err != nil {
				return false, err
			}
			return false, nil
		}
		return strings.Contains(err.Error(), want), err
	})
}

// TestVersionAdmission: every version rule refuses, with the field and the
// versions that are allowed in its message — an unavailable version, a
// minor downgrade, a skipped minor, a NodePool newer than its control plane
// or too old for it, and a control plane moved past a pool's skew — and
// admits what is within the rules.
func TestVersionAdmission(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	const ns = "clusters"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	objs, err := install.ObjectsFor(install.Options{Runtime: install.RuntimeProcess, Versions: catalog})
	if err != nil {
		t.Fatal(err)
	}
	var policy []client.Object
	for _, obj := range objs {
		if obj.GetName() == install.RuntimePolicyName {
			policy = append(policy, obj)
		}
	}
	if err := install.Apply(ctx, c, policy, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}

	// Availability (runtime policy): create, and a change of version.
	refusedWith(t, c, cluster(t, ns, "old", "v1.35.0"),
		"spec.kubernetesVersion: v1.35.0 is not available in this installation: use one of v1.37.1, v1.36.3")
	a := cluster(t, ns, "a", "v1.36.3")
	admitted(t, c, a)
	if err := setVersion(t, c, a, "v1.36.9"); err == nil || !strings.Contains(err.Error(),
		"spec.kubernetesVersion: v1.36.9 is not available in this installation: use one of v1.37.1, v1.36.3") {
		t.Errorf("a to v1.36.9: %v, want refused as unavailable", err)
	}

	// CRD transition rules.
	if err := setVersion(t, c, a, "v1.38.0"); err == nil || !strings.Contains(err.Error(),
		"spec.kubernetesVersion: v1.38.0 skips a minor version from v1.36.3, which is not supported: upgrade one minor at a time, use v1.36.x or v1.37.x") {
		t.Errorf("a v1.36.3 -> v1.38.0: %v, want refused as a skipped minor", err)
	}
	b := cluster(t, ns, "b", "v1.37.1")
	admitted(t, c, b)
	if err := setVersion(t, c, b, "v1.36.3"); err == nil || !strings.Contains(err.Error(),
		"spec.kubernetesVersion: v1.36.3 would downgrade the control plane from v1.37.1 to an older minor, which is not supported: use v1.37.x or v1.38.x") {
		t.Errorf("b v1.37.1 -> v1.36.3: %v, want refused as a minor downgrade", err)
	}

	// NodePool skew against its control plane (a at v1.36.3).
	refusedWith(t, c, nodePool(ns, "newer", "a", "v1.37.1"),
		"spec.kubernetesVersion: v1.37.1 of NodePool newer is newer than its control plane (HostedCluster a runs v1.36.3): use v1.33.x to v1.36.x")
	refusedWith(t, c, nodePool(ns, "ancient", "a", "v1.32.0"),
		"spec.kubernetesVersion: v1.32.0 of NodePool ancient is more than 3 minor versions older than its control plane (HostedCluster a runs v1.36.3): use v1.33.x to v1.36.x")
	oldest := nodePool(ns, "oldest", "a", "v1.33.0")
	admitted(t, c, oldest)
	admitted(t, c, nodePool(ns, "follows", "a", ""))
	admitted(t, c, nodePool(ns, "other-cluster", "nobody", "v1.40.0"))
	updateRefusedWith(t, c, oldest, "v1.33.0", "v1.37.1",
		"spec.kubernetesVersion: v1.37.1 of NodePool oldest is newer than its control plane (HostedCluster a runs v1.36.3): use v1.33.x to v1.36.x")

	// The control plane moved past the oldest pool's skew.
	updateRefusedWith(t, c, a, "v1.36.3", "v1.37.1",
		"spec.kubernetesVersion: v1.37.1 would make the control plane more than 3 minor versions newer than NodePool oldest (v1.33.0): use v1.33.x to v1.36.x, or change the NodePool first")
	// Once the pool moves up, the control plane may follow.
	if err := setVersion(t, c, oldest, "v1.34.0"); err != nil {
		t.Fatalf("oldest v1.33.0 -> v1.34.0: %v, want admitted", err)
	}
	testenv.Eventually(t, 30*time.Second, "a upgraded to v1.37.1 once its pools allow it", func() (bool, error) {
		return setVersion(t, c, a, "v1.37.1") == nil, nil
	})

	// A control plane mid-upgrade (status v1.36.3, spec v1.37.1) admits
	// pools that fit both.
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(a.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(a), cur); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, "v1.36.3", "status", "version"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	refusedWith(t, c, nodePool(ns, "early", "a", "v1.37.1"),
		"spec.kubernetesVersion: v1.37.1 of NodePool early is newer than its control plane (HostedCluster a runs v1.36.3, upgrading to v1.37.1): use v1.34.x to v1.36.x")
	admitted(t, c, nodePool(ns, "mid", "a", "v1.36.3"))
}
