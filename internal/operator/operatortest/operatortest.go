// Package operatortest runs the operator against a test management plane,
// with a process runtime under root that starts the hypershift binary under
// test. It is for the controllers' external tests.
package operatortest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/operator"
	"hypershift.dev/internal/release"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// Setup starts a test management plane with the operator, its hosted
// control planes under DATA_DIR/clusters (returned as root), and creates
// the given namespaces.
func Setup(t *testing.T, namespaces ...string) (env *testenv.Env, root string) {
	t.Helper()
	env = testenv.Start(t)
	root = filepath.Join(env.DataDir, "clusters")
	Start(t, env, root)
	for _, ns := range namespaces {
		if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	return env, root
}

// Releases returns the releases built beside the hypershift binary under
// test (make build); the test fails if they do not match their checksums.
func Releases(t *testing.T) *release.Catalog {
	t.Helper()
	c, err := release.Load(filepath.Join(filepath.Dir(testenv.Binary(t)), "releases"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Start runs the operator until the test ends, then stops every process its
// runtime started.
func Start(t *testing.T, env *testenv.Env, root string, with ...func(*operator.Options)) {
	t.Helper()
	ctrl.SetLogger(testenv.Logger())
	events, notify := operator.NewEvents()
	releases := Releases(t)
	rt, err := process.New(process.Options{Root: root, Binary: testenv.Binary(t), Releases: releases, Log: testenv.Logger(), OnChange: notify})
	if err != nil {
		t.Fatal(err)
	}
	opts := operator.Options{
		RESTConfig: env.RESTConfig, Runtime: rt, Events: events, Releases: releases,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0", EndpointHost: "127.0.0.1",
		AllowRepeatedControllers: true,
	}
	for _, w := range with {
		w(&opts)
	}
	mgr, err := operator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("operator stopped: %v", err)
		}
		rt.StopAll(context.Background())
	})
}

// WaitAvailable waits until hc is Available with every component at its
// version (ClusterVersionProgressing=False), and leaves its latest state in hc.
func WaitAvailable(t *testing.T, c client.Client, hc *hypershiftv1alpha1.HostedCluster) {
	t.Helper()
	key := client.ObjectKeyFromObject(hc)
	testenv.Eventually(t, 3*time.Minute, key.String()+" Available, every component at its version", func() (bool, error) {
		err := c.Get(t.Context(), key, hc)
		return meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) &&
			meta.IsStatusConditionFalse(hc.Status.Conditions, hypershiftv1alpha1.ClusterVersionProgressing.String()), err
	})
}
