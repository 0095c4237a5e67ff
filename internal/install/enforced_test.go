package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestWaitPoliciesEnforced: the wait fails while the probed policy is not
// bound or admits other versions, and once it returns after the policies
// are applied, a HostedCluster that a policy refuses is refused at once.
func TestWaitPoliciesEnforced(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	// The plane runs its releases' versions; a wait for the compiled-in
	// one alone is a wait for a policy that is not there.
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := install.WaitPoliciesEnforced(short, c, install.RuntimeProcess, []string{"v1.99.0"}); err == nil {
		t.Fatal("the wait reported a policy of other versions enforced")
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: install.RuntimePolicyName}}
	if err := c.Delete(ctx, binding); err != nil {
		t.Fatal(err)
	}
	// Unbound, the policy refuses nothing once the API server has seen the
	// delete: the wait must not report it enforced.
	testenv.Eventually(t, 30*time.Second, "the unbound policy admits any version", func() (bool, error) {
		err := c.Create(ctx, at("v1.0.0"), client.DryRunAll)
		return err == nil, err
	})
	short, cancel = context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := install.WaitPoliciesEnforced(short, c, install.RuntimeProcess, nil); err == nil {
		t.Fatal("the wait reported the policies enforced while the probed one was unbound")
	}

	if err := install.API(ctx, c, install.RuntimeProcess, nil, ""); err != nil {
		t.Fatal(err)
	}
	if rt, err := install.InstalledRuntime(ctx, c); err != nil || rt != install.RuntimeProcess {
		t.Fatalf("InstalledRuntime = %q, %v; want %s", rt, err, install.RuntimeProcess)
	}
	if err := install.WaitPoliciesEnforced(ctx, c, install.RuntimeProcess, nil); err != nil {
		t.Fatal(err)
	}
	err := c.Create(ctx, at("v1.2.3"), client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "v1.2.3 is not available in this installation: use one of "+version.KubernetesVersion+" (") {
		t.Fatalf("right after the wait, an unavailable version: %v, want the runtime policy's refusal", err)
	}
}

func at(v string) *hypershiftv1alpha1.HostedCluster {
	return hypershiftv1alpha1.NewHostedCluster(metav1.NamespaceDefault, "probe", hypershiftv1alpha1.NonePlatform, v)
}
