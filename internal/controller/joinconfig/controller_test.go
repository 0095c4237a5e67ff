package joinconfig_test

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/joinconfig"
	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

var (
	clusterGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}
	machineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}
)

// fixture is a HostedCluster "clusters/dev" as the operator leaves it —
// its control plane in clusters-dev, labelled with its UID, an admin
// kubeconfig there — with a NodePool "workers", and the Cluster API Cluster
// "dev" whose control plane is that HostedControlPlane. The management
// plane's own API server stands in for the hosted cluster's: the admin
// kubeconfig is the management plane's, so the tokens land in its
// kube-system.
type fixture struct {
	env *testenv.Env
	c   client.Client
	r   *joinconfig.Reconciler
	ns  string
}

func setUp(t *testing.T) *fixture {
	t.Helper()
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	testenv.InstallClusterAPICRDs(t, c, "clusters", "machines")

	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "dev", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}))
	must(t, c.Create(ctx, hc))
	cpNS := hostedref.ControlPlaneNamespace(hc)
	owner := map[string]string{
		hostedref.ClusterNamespaceLabel: hc.Namespace, hostedref.ClusterNameLabel: hc.Name, hostedref.ClusterUIDLabel: string(hc.UID),
	}
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpNS, Labels: owner}}))
	must(t, c.Create(ctx, &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: hc.Name, Labels: owner},
		Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
			KubernetesVersion: hc.Spec.KubernetesVersion, Networking: hc.Spec.Networking, Etcd: hc.Spec.Etcd, Platform: hc.Spec.Platform,
		},
	}))
	kc, err := os.ReadFile(datadir.Layout{Root: env.DataDir}.ManagementKubeconfig())
	must(t, err)
	must(t, c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpNS, Name: hostedref.AdminKubeconfigSecret, Labels: map[string]string{hostedref.ClusterUIDLabel: string(hc.UID)}},
		Data:       map[string][]byte{hostedref.AdminKubeconfigKey: kc},
	}))
	for _, np := range []struct{ name, cluster string }{{"workers", "dev"}, {"elsewhere", "other"}} {
		must(t, c.Create(ctx, &hypershiftv1alpha1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: np.name},
			Spec: hypershiftv1alpha1.NodePoolSpec{
				ClusterName: np.cluster, Replicas: ptr.To[int32](0),
				KubernetesVersion: version.KubernetesVersion,
				Platform:          hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.NonePlatform},
			},
		}))
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"controlPlaneRef": map[string]any{"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "HostedControlPlane", "name": hc.Name},
	}}}
	cluster.SetGroupVersionKind(clusterGVK)
	cluster.SetNamespace(cpNS)
	cluster.SetName(hc.Name)
	must(t, c.Create(ctx, cluster))
	return &fixture{env: env, c: c, r: &joinconfig.Reconciler{Client: c}, ns: cpNS}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) joinConfig(t *testing.T, ns, name, cluster, pool string) *hypershiftv1alpha1.JoinConfig {
	t.Helper()
	jc := &hypershiftv1alpha1.JoinConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{joinconfig.ClusterNameLabel: cluster}},
		Spec:       hypershiftv1alpha1.JoinConfigSpec{NodePool: pool},
	}
	must(t, f.c.Create(t.Context(), jc))
	return jc
}

// machine makes the Machine of cluster whose bootstrap config is the
// JoinConfig jc, and makes it jc's controller, as Cluster API does.
func (f *fixture) machine(t *testing.T, jc *hypershiftv1alpha1.JoinConfig, cluster, version string) {
	t.Helper()
	m := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName": cluster,
		"bootstrap": map[string]any{"configRef": map[string]any{
			"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "JoinConfig", "name": jc.Name,
		}},
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.example", "kind": "ExampleMachine", "name": jc.Name},
	}}}
	if version != "" {
		must(t, unstructured.SetNestedField(m.Object, version, "spec", "version"))
	}
	m.SetGroupVersionKind(machineGVK)
	m.SetNamespace(jc.Namespace)
	m.SetName(jc.Name)
	must(t, f.c.Create(t.Context(), m))
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(jc), jc))
	jc.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: machineGVK.GroupVersion().String(), Kind: machineGVK.Kind, Name: m.GetName(), UID: m.GetUID(), Controller: ptr.To(true),
	}}
	must(t, f.c.Update(t.Context(), jc))
}

// reconcile runs one pass and returns the config as it is then.
func (f *fixture) reconcile(t *testing.T, jc *hypershiftv1alpha1.JoinConfig) (ctrl.Result, *hypershiftv1alpha1.JoinConfig) {
	t.Helper()
	res, err := f.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(jc)})
	must(t, err)
	got := &hypershiftv1alpha1.JoinConfig{}
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(jc), got))
	return res, got
}

func ready(jc *hypershiftv1alpha1.JoinConfig) *metav1.Condition {
	return meta.FindStatusCondition(jc.Status.Conditions, hypershiftv1alpha1.JoinConfigReady.String())
}

func (f *fixture) initializeControlPlane(t *testing.T, key client.ObjectKey) {
	t.Helper()
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	must(t, f.c.Get(t.Context(), key, cluster))
	must(t, unstructured.SetNestedField(cluster.Object, true, "status", "initialization", "controlPlaneInitialized"))
	must(t, f.c.Status().Update(t.Context(), cluster))
}

// tokens are the pool-labelled bootstrap token Secrets in kube-system.
func (f *fixture) tokens(t *testing.T) []corev1.Secret {
	t.Helper()
	l := &corev1.SecretList{}
	must(t, f.c.List(t.Context(), l, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{hypershiftv1alpha1.NodePoolLabel: "workers"}))
	return l.Items
}

// TestJoinConfig: a JoinConfig waits for its Machine and its Cluster's
// control plane, then gets its userdata once, also across a lost status
// write; what a config cannot be made for says so and issues nothing. One
// management plane serves the cases in turn.
func TestJoinConfig(t *testing.T) {
	f := setUp(t)
	jc := f.joinConfig(t, f.ns, "m1", "dev", "workers")
	t.Run("it waits for its Machine and the control plane", func(t *testing.T) {
		for _, step := range []struct {
			before func()
			reason hypershiftv1alpha1.ConditionReason
		}{
			{before: func() {}, reason: hypershiftv1alpha1.WaitingForMachineReason},
			{before: func() { f.machine(t, jc, "dev", "v"+strings.TrimPrefix(version.KubernetesVersion, "v")) }, reason: hypershiftv1alpha1.WaitingForControlPlaneReason},
		} {
			step.before()
			res, got := f.reconcile(t, jc)
			if c := ready(got); c == nil || c.Reason != step.reason.String() || res.RequeueAfter == 0 {
				t.Fatalf("Ready %+v, requeue %v; want %s and a requeue", c, res.RequeueAfter, step.reason)
			}
		}
		if len(f.tokens(t)) != 0 {
			t.Fatal("a token was issued before the config had a Machine and an initialized control plane")
		}
	})
	f.initializeControlPlane(t, client.ObjectKey{Namespace: f.ns, Name: "dev"})
	t.Run("it makes the userdata once", func(t *testing.T) { makesUserdataOnce(t, f, jc) })
	t.Run("a lost status write issues no second token", func(t *testing.T) { adoptsItsSecret(t, f, jc) })
	t.Run("it refuses what it does not own", func(t *testing.T) { refusesWhatItDoesNotOwn(t, f) })
}

// makesUserdataOnce: a data Secret owned by the config, in Cluster API's
// shape, whose script joins the pool with a single-use token of that pool
// issued in the hosted cluster; another pass issues no second token.
func makesUserdataOnce(t *testing.T, f *fixture, jc *hypershiftv1alpha1.JoinConfig) {
	_, got := f.reconcile(t, jc)
	if c := ready(got); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready %+v, want True", c)
	}
	if !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) || ptr.Deref(got.Status.DataSecretName, "") != "m1" {
		t.Fatalf("status %+v: want dataSecretCreated and dataSecretName m1", got.Status)
	}
	secret := &corev1.Secret{}
	must(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "m1"}, secret))
	if secret.Type != joinconfig.DataSecretType || secret.Labels[joinconfig.ClusterNameLabel] != "dev" || string(secret.Data["format"]) != bootstrap.UserdataFormat {
		t.Errorf("data Secret type %s, labels %v, format %q", secret.Type, secret.Labels, secret.Data["format"])
	}
	if ref := metav1.GetControllerOf(secret); ref == nil || ref.UID != got.UID {
		t.Errorf("data Secret controlled by %+v, want the JoinConfig", ref)
	}
	tokens := f.tokens(t)
	if len(tokens) != 1 || !bootstrap.SingleUse(&tokens[0]) {
		t.Fatalf("%d tokens of the pool (single-use %v), want one single-use token", len(tokens), len(tokens) == 1 && bootstrap.SingleUse(&tokens[0]))
	}
	userdata := string(secret.Data["value"])
	id := strings.TrimPrefix(tokens[0].Name, bootstrap.SecretPrefix)
	for _, want := range []string{
		"#!/bin/sh", "exec hypershift join --server '" + f.env.RESTConfig.Host + "'", "--token-file " + bootstrap.UserdataTokenFile,
		"--ca-cert-hash 'sha256:", "--kubernetes-version 'v" + strings.TrimPrefix(version.KubernetesVersion, "v") + "'", "'" + id + ".",
	} {
		if !strings.Contains(userdata, want) {
			t.Errorf("userdata lacks %q:\n%s", want, userdata)
		}
	}

	_, _ = f.reconcile(t, jc)
	if n := len(f.tokens(t)); n != 1 {
		t.Errorf("%d tokens after another pass, want the one", n)
	}
}

// adoptsItsSecret: the status of a config whose Secret was made is lost
// (a crash before the status write); the next pass finds the Secret it
// owns and issues no second token.
func adoptsItsSecret(t *testing.T, f *fixture, jc *hypershiftv1alpha1.JoinConfig) {
	issued := len(f.tokens(t))
	got := &hypershiftv1alpha1.JoinConfig{}
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(jc), got))
	got.Status = hypershiftv1alpha1.JoinConfigStatus{}
	must(t, f.c.Status().Update(t.Context(), got))
	_, got = f.reconcile(t, jc)
	if !ptr.Deref(got.Status.Initialization.DataSecretCreated, false) || ptr.Deref(got.Status.DataSecretName, "") != jc.Name {
		t.Errorf("status after the pass: %+v, want the Secret adopted", got.Status)
	}
	if n := len(f.tokens(t)); n != issued {
		t.Errorf("%d tokens after the pass, want %d", n, issued)
	}
}

// refusesWhatItDoesNotOwn: a NodePool of another cluster, a Secret of the
// config's name that is not its own (left as it is), a Machine version
// that is not one, a HostedControlPlane a namespace user made, a Cluster
// whose control plane is not a HostedControlPlane — each says so, and no
// token is issued.
func refusesWhatItDoesNotOwn(t *testing.T, f *fixture) {
	ctx := t.Context()
	issued := len(f.tokens(t))

	other := f.joinConfig(t, f.ns, "m-other", "dev", "elsewhere")
	f.machine(t, other, "dev", "")
	_, got := f.reconcile(t, other)
	if c := ready(got); c == nil || c.Reason != hypershiftv1alpha1.InvalidJoinConfigReason.String() || !strings.Contains(c.Message, "spec.nodePool") {
		t.Errorf("a pool of another cluster: Ready %+v, want InvalidJoinConfig naming spec.nodePool", c)
	}

	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "m-taken"}, Data: map[string][]byte{"value": []byte("someone else's")}}
	must(t, f.c.Create(ctx, foreign))
	taken := f.joinConfig(t, f.ns, "m-taken", "dev", "workers")
	f.machine(t, taken, "dev", "")
	_, got = f.reconcile(t, taken)
	if c := ready(got); c == nil || c.Reason != hypershiftv1alpha1.InvalidJoinConfigReason.String() || got.Status.DataSecretName != nil {
		t.Errorf("a Secret of its name exists: Ready %+v, dataSecretName %v", c, got.Status.DataSecretName)
	}
	after := &corev1.Secret{}
	must(t, f.c.Get(ctx, client.ObjectKeyFromObject(foreign), after))
	if string(after.Data["value"]) != "someone else's" || len(after.OwnerReferences) != 0 {
		t.Errorf("the foreign Secret was changed: %v, owners %v", after.Data, after.OwnerReferences)
	}

	badVersion := f.joinConfig(t, f.ns, "m-version", "dev", "workers")
	f.machine(t, badVersion, "dev", "v1.36")
	_, got = f.reconcile(t, badVersion)
	if c := ready(got); c == nil || c.Reason != hypershiftv1alpha1.InvalidJoinConfigReason.String() || !strings.Contains(c.Message, "v1.36") {
		t.Errorf("a Machine version that is not one: Ready %+v", c)
	}

	// A namespace user's own Cluster and HostedControlPlane, labelled as
	// dev's: the control plane is not where dev keeps its own.
	rogue := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"controlPlaneRef": map[string]any{"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "HostedControlPlane", "name": "rogue"},
	}}}
	rogue.SetGroupVersionKind(clusterGVK)
	rogue.SetNamespace("clusters")
	rogue.SetName("rogue")
	must(t, f.c.Create(ctx, rogue))
	f.initializeControlPlane(t, client.ObjectKeyFromObject(rogue))
	devCP := &hypershiftv1alpha1.HostedControlPlane{}
	must(t, f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "dev"}, devCP))
	must(t, f.c.Create(ctx, &hypershiftv1alpha1.HostedControlPlane{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "rogue", Labels: devCP.Labels},
		Spec:       devCP.Spec,
	}))
	stolen := f.joinConfig(t, "clusters", "rogue-m", "rogue", "workers")
	f.machine(t, stolen, "rogue", "")
	_, got = f.reconcile(t, stolen)
	if c := ready(got); c == nil || c.Reason != hypershiftv1alpha1.InvalidJoinConfigReason.String() || !strings.Contains(c.Message, "where HostedCluster") {
		t.Errorf("a HostedControlPlane made by a namespace user: Ready %+v", c)
	}

	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(clusterGVK)
	must(t, f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "dev"}, cluster))
	must(t, unstructured.SetNestedField(cluster.Object, "KubeadmControlPlane", "spec", "controlPlaneRef", "kind"))
	must(t, unstructured.SetNestedField(cluster.Object, "controlplane.cluster.x-k8s.io", "spec", "controlPlaneRef", "apiGroup"))
	must(t, f.c.Update(ctx, cluster))
	kubeadm := f.joinConfig(t, f.ns, "m-kubeadm", "dev", "workers")
	f.machine(t, kubeadm, "dev", "")
	_, got = f.reconcile(t, kubeadm)
	if c := ready(got); c == nil || c.Reason != hypershiftv1alpha1.InvalidJoinConfigReason.String() || !strings.Contains(c.Message, "not a HostedControlPlane") {
		t.Errorf("a Cluster of another control plane: Ready %+v", c)
	}
	if n := len(f.tokens(t)); n != issued {
		t.Errorf("%d tokens issued for configs that were refused", n-issued)
	}
}
