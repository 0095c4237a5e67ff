package nodepool

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/testenv"
)

// adminKubeconfig makes a ServiceAccount bound to cluster-admin and a
// kubeconfig with a token of it: deleting the ServiceAccount revokes the
// kubeconfig, as rotating a hosted cluster's admin credentials does.
func adminKubeconfig(t *testing.T, ctx context.Context, kube kubernetes.Interface, host string, ca []byte, name string) []byte {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name}}
	if _, err := kube.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: name}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	kc, err := kubeconfig.Render(kubeconfig.Params{Name: "c", Server: host, CAPEM: ca, Token: tok.Status.Token})
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

// A hosted cluster's admin credentials are revoked: the health check drops
// the connection (its caches stop) and enqueues the pools that used it; the
// next get connects with the new kubeconfig.
func TestRevokedKubeconfigDisconnectsAndReconnects(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	ca := env.RESTConfig.CAData
	if len(ca) == 0 {
		t.Fatal("test premise: the management plane's REST config carries its CA")
	}
	first := adminKubeconfig(t, ctx, kube, env.RESTConfig.Host, ca, "admin-one")

	h := newHostedClusters(clustercache.New(clustercache.Options{ProbePath: clustercache.AdminProbePath}))
	key := types.NamespacedName{Namespace: "clusters", Name: "c"}
	hc, err := h.get(ctx, key, first)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hc.poolNodes("workers"); err != nil {
		t.Fatal(err)
	}

	// What is cached of a Node is what the controller reads: no managed
	// fields, no image list.
	node, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cached"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Images = []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1 << 20}}
	if _, err := kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cacheDeadline := time.Now().Add(10 * time.Second)
	for {
		cached, err := hc.nodes.Get("cached")
		if err == nil && cached.ResourceVersion != node.ResourceVersion {
			if len(cached.ManagedFields) != 0 || len(cached.Status.Images) != 0 {
				t.Errorf("cached Node keeps %d managed fields and %d images, want none", len(cached.ManagedFields), len(cached.Status.Images))
			}
			break
		}
		if time.Now().After(cacheDeadline) {
			t.Fatalf("the Node's status update did not reach the cache: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := kube.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Delete(ctx, "admin-one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(45 * time.Second) // a probe every 10 s
	for enqueued := false; !enqueued; {
		select {
		case ev := <-h.events:
			enqueued = ev.Object.GetNamespace() == "clusters" && ev.Object.GetName() == "workers"
		case <-deadline:
			t.Fatal("the pool was not enqueued after its hosted cluster's credentials were revoked")
		}
	}
	select {
	case <-hc.informerCtx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the revoked connection's caches still run")
	}

	second := adminKubeconfig(t, ctx, kube, env.RESTConfig.Host, ca, "admin-two")
	again, err := h.get(ctx, key, second)
	if err != nil {
		t.Fatal(err)
	}
	if again == hc {
		t.Fatal("get returned the revoked connection")
	}
	if _, err := again.kube.CoreV1().Namespaces().Get(context.WithoutCancel(ctx), metav1.NamespaceSystem, metav1.GetOptions{}); err != nil {
		t.Errorf("the new connection does not work: %v", err)
	}
	h.forget(key)
	if again.informerCtx.Err() == nil {
		t.Error("forget left the caches running")
	}
}

// TestHostedCacheIsBounded: a hosted cluster's admin decides how many Nodes
// (and node CSRs, labelled Secrets) it holds; past the controller's limit
// its caches stop, its pools are enqueued, and connecting is refused
// naming the limit until the cluster is back under it.
func TestHostedCacheIsBounded(t *testing.T) {
	defer func(saved struct{ nodes, csrs, labelled int }) { cacheLimits = saved }(cacheLimits)
	cacheLimits.nodes = 3
	env := testenv.Start(t)
	ctx := t.Context()
	kube := kubernetes.NewForConfigOrDie(env.RESTConfig)
	kc := adminKubeconfig(t, ctx, kube, env.RESTConfig.Host, env.RESTConfig.CAData, "admin")
	node := func(name string) {
		t.Helper()
		if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"n1", "n2", "n3"} {
		node(name)
	}
	h := newHostedClusters(clustercache.New(clustercache.Options{ProbePath: clustercache.AdminProbePath}))
	key := types.NamespacedName{Namespace: "clusters", Name: "c"}
	hc, err := h.get(ctx, key, kc)
	if err != nil {
		t.Fatalf("3 Nodes, the limit: %v", err)
	}
	if _, err := hc.poolNodes("workers"); err != nil {
		t.Fatal(err)
	}
	node("n4")
	deadline := time.After(30 * time.Second)
	for enqueued := false; !enqueued; {
		select {
		case ev := <-h.events:
			enqueued = ev.Object.GetName() == "workers"
		case <-deadline:
			t.Fatal("the pool was not enqueued when its hosted cluster passed the Node limit")
		}
	}
	if hc.informerCtx.Err() == nil {
		t.Error("the caches of a cluster past its share still run")
	}
	const want = "hosted cluster clusters/c holds more than 3 Nodes, the most the operator caches of one cluster"
	if _, err := h.get(ctx, key, kc); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("connect past the limit: %v, want %q", err, want)
	}
	if err := kube.CoreV1().Nodes().Delete(ctx, "n4", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := h.get(ctx, key, kc)
	if err != nil {
		t.Fatalf("back under the limit: %v", err)
	}
	if nodes, err := again.nodes.List(labels.Everything()); err != nil || len(nodes) != 3 {
		t.Errorf("the new connection caches %d Nodes (%v), want 3", len(nodes), err)
	}
	h.forget(key)
}
