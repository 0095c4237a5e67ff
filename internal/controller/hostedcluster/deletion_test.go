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

// TestDeletion: what a HostedCluster's deletion finds and takes, against
// a real API server, its Reconciler called directly.
func TestDeletion(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}); err != nil {
		t.Fatal(err)
	}
	t.Run("it finds the namespace the cache has not", func(t *testing.T) { deletionFindsTheNamespaceTheCacheHasNot(t, c) })
	t.Run("it takes the cluster's other namespaces", func(t *testing.T) { deletionTakesTheClustersOtherNamespaces(t, c) })
}

// deletingCluster makes HostedCluster clusters/name with the controller's
// finalizer, and namespaces with the labels given (name → labels, where
// "UID" stands for the cluster's UID), then deletes the cluster.
func deletingCluster(t *testing.T, c client.Client, name string, namespaces map[string]map[string]string) *hypershiftv1alpha1.HostedCluster {
	t.Helper()
	ctx := t.Context()
	hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{
		Namespace: "clusters", Name: name, Finalizers: []string{hostedcluster.Finalizer},
	}}
	if err := c.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	for ns, labels := range namespaces {
		l := map[string]string{}
		for k, v := range labels {
			if v == "UID" {
				v = string(hc.UID)
			}
			l[k] = v
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: l}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, hc); err != nil {
		t.Fatal(err)
	}
	return hc
}

// beingDeleted: the namespace is gone or going.
func beingDeleted(t *testing.T, c client.Client, name string) bool {
	t.Helper()
	ns := &corev1.Namespace{}
	err := c.Get(t.Context(), client.ObjectKey{Name: name}, ns)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err != nil || !ns.DeletionTimestamp.IsZero()
}

// A cluster deleted right after the pass that created its control-plane
// namespace, before the cache has the namespace, still tears it down:
// removing the finalizer on the cache's word left the namespace (and a
// restore's pinned port) behind, and a cluster of the same name created
// later (a migration retried after a rollback) was refused as a conflict.
func deletionFindsTheNamespaceTheCacheHasNot(t *testing.T, c client.Client) {
	hc := deletingCluster(t, c, "late", map[string]map[string]string{"clusters-late": {
		hostedcluster.ClusterUIDLabel: "UID", hostedcluster.ClusterNamespaceLabel: "clusters", hostedcluster.ClusterNameLabel: "late",
	}})
	r := &hostedcluster.Reconciler{Client: staleCache{c}, APIReader: c}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(hc)}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if !beingDeleted(t, c, "clusters-late") {
		t.Error("the control-plane namespace is not being deleted")
	}
	// The cluster keeps its finalizer until the namespace is gone.
	if err := c.Get(t.Context(), req.NamespacedName, hc); err != nil {
		t.Fatalf("the cluster went before its namespace: %v", err)
	}
}

// Once its control plane is gone, a cluster's other namespaces — those
// labelled with its UID, as its machines' namespace on the kube runtime,
// kept while it holds guest volumes — go with it; a namespace labelled
// with another cluster's UID stays.
func deletionTakesTheClustersOtherNamespaces(t *testing.T, c client.Client) {
	hc := deletingCluster(t, c, "gone", map[string]map[string]string{
		"clusters-gone-machines":  {hostedcluster.ClusterUIDLabel: "UID"},
		"clusters-other-machines": {hostedcluster.ClusterUIDLabel: "another-cluster"},
	})
	r := &hostedcluster.Reconciler{Client: c, APIReader: c}
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(hc)}
	if _, err := r.Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if !beingDeleted(t, c, "clusters-gone-machines") {
		t.Error("the cluster's machines namespace is not being deleted")
	}
	if beingDeleted(t, c, "clusters-other-machines") {
		t.Error("another cluster's namespace is being deleted")
	}
	// The cluster keeps its finalizer until the namespace is gone.
	if err := c.Get(t.Context(), client.ObjectKey{Name: "clusters-gone-machines"}, &corev1.Namespace{}); err == nil {
		if err := c.Get(t.Context(), req.NamespacedName, hc); err != nil {
			t.Fatalf("the cluster went before its machines namespace: %v", err)
		}
	}
}
