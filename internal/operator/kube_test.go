package operator

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/kube"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestKubeModeWithInstalledRBAC: the operator of the kube runtime, as the
// service account `hypershift install` makes and with exactly the RBAC it
// grants, takes the leader Lease, syncs its caches and brings a
// NodePort-published HostedCluster to its control-plane namespace, PKI and
// HostedControlPlane.
// The API server authorizes with RBAC, so a missing rule fails this.
func TestKubeModeWithInstalledRBAC(t *testing.T) {
	env := testenv.Start(t)
	objs, err := install.ObjectsFor(install.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(t.Context(), env.Client, objs, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + install.DefaultNamespace + ":" + install.OperatorName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + install.DefaultNamespace, "system:authenticated"},
	}
	opts := WithKubeRuntime(Options{
		RESTConfig: cfg, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: install.DefaultNamespace,
		AllowRepeatedControllers: true,
	}, kube.Options{Image: "hypershift.dev/hypershift:test"})
	made := false
	newRuntime := opts.NewRuntime
	opts.NewRuntime = func(mgr ctrl.Manager) (runtime.Runtime, error) {
		made = true
		return newRuntime(mgr)
	}
	mgr, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if !made {
		t.Fatal("New did not make the runtime through Options.NewRuntime")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("operator stopped before it was elected: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("operator not elected leader within a minute: can it get and create its Lease?")
	}
	syncCtx, cancelSync := context.WithTimeout(ctx, time.Minute)
	defer cancelSync()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		t.Fatal("operator caches did not sync: can it list and watch everything it reads?")
	}

	hc := hypershiftv1alpha1.NewHostedCluster("default", "rbac", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	// Published as the kube runtime can: refused by the controller unless
	// the kube mode says what its runtime supports.
	hc.Spec.Services = []hypershiftv1alpha1.ServicePublishingStrategyMapping{{
		Service: hypershiftv1alpha1.APIServer,
		ServicePublishingStrategy: hypershiftv1alpha1.ServicePublishingStrategy{
			Type:     hypershiftv1alpha1.NodePort,
			NodePort: &hypershiftv1alpha1.NodePortPublishingStrategy{Address: "192.0.2.10"},
		},
	}}
	if err := env.Client.Create(t.Context(), hc); err != nil {
		t.Fatal(err)
	}
	ns := "default-rbac"
	testenv.Eventually(t, time.Minute, "the operator's namespace, PKI and HostedControlPlane of default/rbac", func() (bool, error) {
		cur := &hypershiftv1alpha1.HostedCluster{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(hc), cur); err != nil {
			return false, err
		}
		if len(cur.Finalizers) == 0 {
			return false, nil
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
			return false, err
		}
		secrets := &corev1.SecretList{}
		if err := env.Client.List(ctx, secrets, client.InNamespace(ns)); err != nil || len(secrets.Items) == 0 {
			return false, err
		}
		return true, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: hc.Name}, &hypershiftv1alpha1.HostedControlPlane{})
	})
}
