package clusterapi_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/controller/nodepool/platform/clusterapi"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

var (
	clusterGVK            = capiGVK("Cluster")
	machineGVK            = capiGVK("Machine")
	machineDeploymentGVK  = capiGVK("MachineDeployment")
	machineHealthCheckGVK = capiGVK("MachineHealthCheck")
	hostClusterGVK        = hypershiftv1alpha1.GroupVersion.WithKind("HostCluster")
	hostMachineTemplGVK   = hypershiftv1alpha1.GroupVersion.WithKind("HostMachineTemplate")
	joinConfigTemplGVK    = hypershiftv1alpha1.GroupVersion.WithKind("JoinConfigTemplate")
	secretGVK             = corev1.SchemeGroupVersion.WithKind("Secret")
)

func capiGVK(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: clusterapi.Group, Version: clusterapi.Version, Kind: kind}
}

// fixture is a management plane with Cluster API's CRDs (no Cluster API
// controller runs): every object is what the package under test wrote, or
// what a test made in its place.
type fixture struct {
	c client.Client
}

// setUp starts the management plane and installs the Cluster API CRDs
// the package writes and reads, as `make build` copied them beside the
// manager.
func setUp(t *testing.T) *fixture {
	t.Helper()
	c := testenv.Start(t).FastClient(t)
	testenv.InstallClusterAPICRDs(t, c, "clusters", "machines", "machinedeployments", "machinehealthchecks")
	return &fixture{c: c}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// cluster is a HostedCluster of platform Host in its own namespace,
// with its control-plane namespace and the admin kubeconfig the operator
// keeps there (token names its credentials).
type cluster struct {
	hc *hypershiftv1alpha1.HostedCluster
	// ns is the control-plane namespace.
	ns string
}

func (f *fixture) cluster(t *testing.T, namespace, name string) *cluster {
	t.Helper()
	return f.clusterOf(t, namespace, name, nil)
}

// clusterOf is cluster, the HostedCluster edited by edit before it is
// created.
func (f *fixture) clusterOf(t *testing.T, namespace, name string, edit func(hc *hypershiftv1alpha1.HostedCluster)) *cluster {
	t.Helper()
	ctx := t.Context()
	hc := hypershiftv1alpha1.NewHostedCluster(namespace, name, hypershiftv1alpha1.HostPlatform, version.KubernetesVersion)
	if edit != nil {
		edit(hc)
	}
	must(t, f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	must(t, f.c.Create(ctx, hc))
	if hc.UID == "" {
		t.Fatal("the HostedCluster was created without a UID")
	}
	cl := &cluster{hc: hc, ns: hostedref.ControlPlaneNamespace(hc)}
	must(t, f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cl.ns, Labels: cl.ownerLabels()}}))
	must(t, f.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cl.ns, Name: hostedref.AdminKubeconfigSecret, Labels: cl.ownerLabels()},
		Data:       map[string][]byte{hostedref.AdminKubeconfigKey: adminKubeconfig(t, "first")},
	}))
	return cl
}

// ownerLabels tie a control-plane object to the cluster, as the
// HostedCluster controller labels what it creates.
func (cl *cluster) ownerLabels() map[string]string {
	return map[string]string{
		hostedref.ClusterNamespaceLabel: cl.hc.Namespace,
		hostedref.ClusterNameLabel:      cl.hc.Name,
		hostedref.ClusterUIDLabel:       string(cl.hc.UID),
	}
}

// adminKubeconfig is a kubeconfig of inline credentials, as
// hostedref.AdminKubeconfig accepts it.
func adminKubeconfig(t *testing.T, token string) []byte {
	t.Helper()
	data, err := kubeconfig.Render(kubeconfig.Params{Name: "admin", Server: "https://127.0.0.1:6443", CAPEM: []byte("a CA"), Token: token})
	must(t, err)
	return data
}

// setAdminKubeconfig rewrites the cluster's admin kubeconfig (a renewed
// credential).
func (f *fixture) setAdminKubeconfig(t *testing.T, cl *cluster, data []byte) {
	t.Helper()
	s := &corev1.Secret{}
	must(t, f.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: hostedref.AdminKubeconfigSecret}, s))
	s.Data[hostedref.AdminKubeconfigKey] = data
	must(t, f.c.Update(t.Context(), s))
}

// nodePool is a NodePool of platform Host of the cluster, edited by edit
// before it is created.
func (f *fixture) nodePool(t *testing.T, cl *cluster, name string, edit func(np *hypershiftv1alpha1.NodePool)) *hypershiftv1alpha1.NodePool {
	t.Helper()
	np := &hypershiftv1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: cl.hc.Namespace, Name: name},
		Spec: hypershiftv1alpha1.NodePoolSpec{
			ClusterName:       cl.hc.Name,
			KubernetesVersion: version.KubernetesVersion,
			Replicas:          ptr.To[int32](1),
			Platform:          hypershiftv1alpha1.NodePoolPlatform{Type: hypershiftv1alpha1.HostPlatform},
		},
	}
	if edit != nil {
		edit(np)
	}
	must(t, f.c.Create(t.Context(), np))
	if np.UID == "" {
		t.Fatal("the NodePool was created without a UID")
	}
	return np
}

// update writes the NodePool after edit, and keeps what was written.
func (f *fixture) update(t *testing.T, np *hypershiftv1alpha1.NodePool, edit func(np *hypershiftv1alpha1.NodePool)) {
	t.Helper()
	edit(np)
	must(t, f.c.Update(t.Context(), np))
}

// pool is one reconcile of the NodePool at the version; requeues records
// what it asked for.
type pool struct {
	*platform.Pool
	requeues []time.Duration
}

func poolOf(cl *cluster, np *hypershiftv1alpha1.NodePool, version string) *pool {
	p := &pool{}
	p.Pool = &platform.Pool{
		NodePool: np, HostedCluster: cl.hc, Log: testenv.Logger(), Version: version,
		RequeueBy: func(d time.Duration) { p.requeues = append(p.requeues, d) },
	}
	return p
}

// reconcile runs Reconcile for want machines, failing the test on an
// error.
func reconcile(t *testing.T, m *clusterapi.Platform, p *pool, want int32) platform.Report {
	t.Helper()
	r, err := m.Reconcile(t.Context(), p.Pool, want)
	if err != nil {
		t.Fatalf("Reconcile %s (want %d): %v", p.NodePool.Name, want, err)
	}
	return r
}

func started(context.Context) error { return nil }

// get reads the object of kind k, failing the test when there is none.
func (f *fixture) get(t *testing.T, k schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	if err := f.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, u); err != nil {
		t.Fatalf("%s %s/%s: %v", k.Kind, namespace, name, err)
	}
	return u
}

// absent fails the test unless there is no object of kind k and name.
func (f *fixture) absent(t *testing.T, k schema.GroupVersionKind, namespace, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	err := f.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, u)
	switch {
	case err == nil:
		t.Errorf("%s %s/%s exists (labels %v), want none", k.Kind, namespace, name, u.GetLabels())
	case !apierrors.IsNotFound(err):
		t.Errorf("%s %s/%s: %v", k.Kind, namespace, name, err)
	}
}

// field is the value at path in u; nil when there is none.
func field(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v
}

// wantField fails the test unless u has want at path (nil: no field).
func wantField(t *testing.T, u *unstructured.Unstructured, want any, path ...string) {
	t.Helper()
	if got := field(u, path...); !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s: %v = %#v, want %#v", u.GetKind(), u.GetName(), path, got, want)
	}
}

// wantOwner fails the test unless u carries the owner label of uid.
func wantOwner(t *testing.T, u *unstructured.Unstructured, uid types.UID) {
	t.Helper()
	if got, want := u.GetLabels()[clusterapi.OwnerLabel], string(uid); got != want {
		t.Errorf("%s %s: label %s = %q, want %q", u.GetKind(), u.GetName(), clusterapi.OwnerLabel, got, want)
	}
}

// machine makes a Cluster API Machine of the cluster's pool (the labels
// Cluster API gives a MachineDeployment's Machines), edited by edit
// before it is created; nodeName, when set, is its status.nodeRef.
func (f *fixture) machine(t *testing.T, cl *cluster, poolName, name, version, nodeName string, edit func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName": cl.hc.Name,
		"version":     version,
		"bootstrap": map[string]any{"configRef": map[string]any{
			"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "JoinConfig", "name": name,
		}},
		"infrastructureRef": map[string]any{
			"apiGroup": hypershiftv1alpha1.GroupVersion.Group, "kind": "HostMachine", "name": name,
		},
	}}}
	u.SetGroupVersionKind(machineGVK)
	u.SetNamespace(cl.ns)
	u.SetName(name)
	u.SetLabels(map[string]string{clusterapi.ClusterNameLabel: cl.hc.Name, clusterapi.DeploymentNameLabel: poolName})
	if edit != nil {
		edit(u)
	}
	must(t, f.c.Create(t.Context(), u))
	if nodeName != "" {
		must(t, unstructured.SetNestedField(u.Object, nodeName, "status", "nodeRef", "name"))
		must(t, f.c.Status().Update(t.Context(), u))
	}
	return u
}

// setConditions writes u's status.conditions (metav1.Conditions).
func (f *fixture) setConditions(t *testing.T, u *unstructured.Unstructured, conds ...metav1.Condition) {
	t.Helper()
	u = f.get(t, u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	var list []any
	for _, c := range conds {
		c.LastTransitionTime = metav1.Now()
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		must(t, err)
		list = append(list, m)
	}
	must(t, unstructured.SetNestedSlice(u.Object, list, "status", "conditions"))
	must(t, f.c.Status().Update(t.Context(), u))
}

// setKubeletVersion writes u's status.nodeInfo, as Cluster API copies it
// from the Machine's Node, with that kubelet version.
func (f *fixture) setKubeletVersion(t *testing.T, u *unstructured.Unstructured, kubeletVersion string) {
	t.Helper()
	u = f.get(t, u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	info := map[string]any{"kubeletVersion": kubeletVersion}
	for _, k := range []string{
		"architecture", "bootID", "containerRuntimeVersion", "kernelVersion", "kubeProxyVersion",
		"machineID", "operatingSystem", "osImage", "systemUUID",
	} {
		info[k] = "x"
	}
	must(t, unstructured.SetNestedMap(u.Object, info, "status", "nodeInfo"))
	must(t, f.c.Status().Update(t.Context(), u))
}

// node is a Node bound to a pool, as the controller hands them to the
// platform, Ready or not.
func node(name string, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}
