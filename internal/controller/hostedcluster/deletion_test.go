package hostedcluster_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/hostedcluster"
	"hypershift.dev/internal/testenv"
)

// staleCache answers as a cache that has not seen any Namespace yet.
type staleCache struct{ client.Client }

func (c staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Namespace); ok {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A cluster deleted right after the pass that created its control-plane
// namespace, before the cache has the namespace, still tears it down:
// removing the finalizer on the cache's word left the namespace (and a
// restore's pinned port) behind, and a cluster of the same name created
// later (a migration retried after a rollback) was refused as a conflict.
func TestDeletionFindsTheNamespaceTheCacheHasNot(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: "clusters", Name: "late", Finalizers: []string{hostedcluster.Finalizer},
	}}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters-late", Labels: map[string]string{
		hostedcluster.ClusterUIDLabel:       string(hc.UID),
		hostedcluster.ClusterNamespaceLabel: hc.Namespace,
		hostedcluster.ClusterNameLabel:      hc.Name,
	}}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, hc); err != nil {
		t.Fatal(err)
	}

	r := &hostedcluster.Reconciler{Client: staleCache{c}, APIReader: c}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(hc)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); err == nil && ns.DeletionTimestamp.IsZero() {
		t.Error("the control-plane namespace is not being deleted")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	// The cluster keeps its finalizer until the namespace is gone.
	if err := c.Get(ctx, req.NamespacedName, hc); err != nil {
		t.Fatalf("the cluster went before its namespace: %v", err)
	}
}

// Once its control plane is gone, a cluster's other namespaces — those
// labelled with its UID, as its machines' namespace on the kube runtime,
// kept while it holds guest volumes — go with it; a namespace labelled
// with another cluster's UID stays.
func TestDeletionTakesTheClustersOtherNamespaces(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: "clusters", Name: "gone", Finalizers: []string{hostedcluster.Finalizer},
	}}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	labelled := func(name, uid string) *corev1.Namespace {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{hostedcluster.ClusterUIDLabel: uid}}}
		if err := c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		return ns
	}
	machines := labelled("clusters-gone-machines", string(hc.UID))
	other := labelled("clusters-other-machines", "another-cluster")
	if err := c.Delete(ctx, hc); err != nil {
		t.Fatal(err)
	}

	r := &hostedcluster.Reconciler{Client: c, APIReader: c}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(hc)}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(machines), machines); err == nil && machines.DeletionTimestamp.IsZero() {
		t.Error("the cluster's machines namespace is not being deleted")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil || !other.DeletionTimestamp.IsZero() {
		t.Errorf("another cluster's namespace: %v, deleting %v; want it kept", err, other.DeletionTimestamp)
	}
	// The cluster keeps its finalizer until the namespace is gone.
	if err := c.Get(ctx, client.ObjectKey{Name: machines.Name}, &corev1.Namespace{}); err == nil {
		if err := c.Get(ctx, req.NamespacedName, hc); err != nil {
			t.Fatalf("the cluster went before its machines namespace: %v", err)
		}
	}
}
