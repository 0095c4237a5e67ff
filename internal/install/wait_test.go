package install_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/install"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
)

// TestWaitOperator: install waits until the operator Deployment reports its
// replicas available, and otherwise says how far it got and what to check.
// No pods run on testenv, so the test writes the Deployment's status as the
// deployment controller would.
func TestWaitOperator(t *testing.T) {
	env := testenv.Start(t)
	// Unthrottled: the short wait below must get to read the Deployment,
	// not spend its time in client-go's rate limiter after the applies.
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.QPS, cfg.Burst = 1000, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := install.ObjectsFor(install.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(t.Context(), c, objs, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
	if err := install.WaitCRDs(t.Context(), c, objs); err != nil {
		t.Fatal(err)
	}
	err = install.WaitOperator(t.Context(), c, objs, 3*time.Second)
	for _, want := range []string{"the operator Deployment hypershift/hypershift-operator is not available", "0 of 2 replicas available", "is the image hypershift.dev/hypershift:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WaitOperator with no pods: %v, want it to contain %q", err, want)
		}
	}
	d := &appsv1.Deployment{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: install.DefaultNamespace, Name: install.OperatorName}, d); err != nil {
		t.Fatal(err)
	}
	// An upgrade under way: the old pods are available, none of the new
	// template yet (its image may not even pull).
	d.Status.ObservedGeneration = d.Generation
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas = 2, 2, 2, 0
	if err := c.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if err := install.WaitOperator(t.Context(), c, objs, 3*time.Second); err == nil || !strings.Contains(err.Error(), "0 updated") {
		t.Errorf("WaitOperator with only the old replicas available: %v, want it to wait for the updated ones", err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	d.Status.UpdatedReplicas = 2
	if err := c.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if err := install.WaitOperator(t.Context(), c, objs, 30*time.Second); err != nil {
		t.Errorf("WaitOperator with 2 of 2 replicas available: %v", err)
	}
}
