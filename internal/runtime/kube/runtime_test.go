package kube

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
)

// startAPIServer starts a real API server whose env.Client is as fast as
// the operator's: the client-go default of 5 requests a second would make
// each Apply of a control plane take seconds; the operator allows 200.
func startAPIServer(t *testing.T) *testenv.Env {
	t.Helper()
	log.SetLogger(testenv.Logger())
	env := testenv.Start(t)
	env.RESTConfig, env.Client = env.FastConfig(), env.FastClient(t)
	return env
}

// The tests below run against a real API server. Nothing runs pods there
// (no scheduler, kubelet or workload controllers): status tests write the
// pods, and their status, themselves.
func TestRuntime(t *testing.T) {
	env := startAPIServer(t)
	tests := []struct {
		name string
		run  func(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef)
	}{
		{"ApplyCreatesAndIsIdempotent", testApplyIdempotent},
		{"ApplyRollsChangedFilesAndRemovesComponents", testApplyChanges},
		{"ForeignObjectsAreNotTouched", testForeignObjects},
		{"StatusFromPods", testStatus},
		{"PublishedNodePortAndLoadBalancer", testPublished},
		{"DeleteRemovesOnlyItsOwn", testDelete},
		{"DeleteWaitsForItsPodsAWhile", testDeleteWaitsForPods},
		{"WatchNotifiesTheControlPlane", testWatch},
		{"ForeignObjectsBehindALabelledCache", testForeignBehindCache},
		{"PodsPassRestrictedPodSecurity", testRestrictedPods},
		{"RenderedControlPlaneApplies", testRenderedApplies},
		{"ClaimTemplatesOutliveNewDefaults", testClaimTemplatesKept},
		{"PinnedNodePort", testPinnedNodePort},
		{"MachinesArePodsOfTheirOwner", testMachines},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := testRef
			ref.Namespace = "clusters-t" + string(rune('a'+i))
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}
			if err := env.Client.Create(t.Context(), ns); err != nil {
				t.Fatal(err)
			}
			tt.run(t, env, ref)
		})
	}
}

// nodePort is the fixed node port of the endpoint in a test's namespace:
// node ports are unique across the cluster.
func nodePort(ref runtime.ControlPlaneRef) int {
	return 30400 + int(ref.Namespace[len(ref.Namespace)-1]-'a')
}

// clusterSpecs are testSpecs with the endpoint on the namespace's node port.
func clusterSpecs(ref runtime.ControlPlaneRef, etcd, api int) []runtime.Spec {
	specs := testSpecs(etcd, api)
	for i := range specs {
		for j := range specs[i].Publish {
			if specs[i].Publish[j].NodePort != 0 {
				specs[i].Publish = append([]runtime.Publish(nil), specs[i].Publish...)
				specs[i].Publish[j].NodePort = nodePort(ref)
			}
		}
	}
	return specs
}

// writes counts the writes a client makes, for tests that something was
// left untouched.
type writes struct {
	mu sync.Mutex
	n  int
}

func (w *writes) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// countingClient wraps c so that every write is counted.
func countingClient(t *testing.T, env *testenv.Env) (client.Client, *writes) {
	t.Helper()
	ww, err := client.NewWithWatch(env.RESTConfig, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	w := &writes{}
	add := func() {
		w.mu.Lock()
		w.n++
		w.mu.Unlock()
	}
	return interceptor.NewClient(ww, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			add()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			add()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			add()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj k8sruntime.ApplyConfiguration, opts ...client.ApplyOption) error {
			add()
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			add()
			return c.Delete(ctx, obj, opts...)
		},
	}), w
}

// resourceVersions returns the resourceVersion of every object rendered
// for specs, failing when one is missing.
func resourceVersions(t *testing.T, c client.Client, ref runtime.ControlPlaneRef, specs []runtime.Spec) map[string]string {
	t.Helper()
	objs, err := Objects(ref, specs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, obj := range objs {
		gvk := obj.GetObjectKind().GroupVersionKind()
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(gvk)
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), live); err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, obj.GetName(), err)
		}
		out[objectKey(gvk, obj.GetName())] = live.ResourceVersion
	}
	return out
}

func testApplyIdempotent(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	rt := New(c, testOptions())
	specs := clusterSpecs(ref, 3, 2)
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	first := resourceVersions(t, c, ref, specs)
	if len(first) < 20 {
		t.Fatalf("only %d objects applied", len(first))
	}
	if err := rt.Apply(t.Context(), ref, clusterSpecs(ref, 3, 2)); err != nil {
		t.Fatal(err)
	}
	for key, rv := range resourceVersions(t, c, ref, specs) {
		if first[key] != rv {
			t.Errorf("a second Apply changed %s (resourceVersion %s → %s)", key, first[key], rv)
		}
	}
}

func testApplyChanges(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	rt := New(c, testOptions())
	specs := clusterSpecs(ref, 1, 1)
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	annotation := func() string {
		d := &appsv1.Deployment{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "kube-apiserver"}, d); err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[FilesHashAnnotation]
	}
	before := annotation()
	var kept []runtime.Spec
	for _, s := range specs {
		if s.Component == "konnectivity-server" {
			s.Files = append([]runtime.File(nil), s.Files...)
			s.Files[0].Content = []byte("renewed konnectivity-server.crt")
		}
		if s.Component != "kube-scheduler" {
			kept = append(kept, s)
		}
	}
	if err := rt.Apply(t.Context(), ref, kept); err != nil {
		t.Fatal(err)
	}
	if after := annotation(); after == before {
		t.Errorf("a changed sidecar file kept the pod template's %s %s: the pods would keep the old file", FilesHashAnnotation, before)
	}
	for _, obj := range []client.Object{
		&appsv1.Deployment{}, &corev1.Secret{}, &corev1.Service{},
	} {
		name := "kube-scheduler"
		if _, ok := obj.(*corev1.Secret); ok {
			name = "kube-scheduler-files"
		}
		err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: name}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s of the removed component: %v, want it deleted", obj, name, err)
		}
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "kube-controller-manager"}, &appsv1.Deployment{}); err != nil {
		t.Errorf("a kept component's Deployment: %v", err)
	}

	// An object replaced since Apply checked it (another UID) is not
	// written.
	objs, err := Objects(ref, kept, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	secret, ok := objs[0].(*corev1.Secret)
	if !ok {
		t.Fatalf("the first object is a %T, want the etcd files Secret", objs[0])
	}
	secret.Data["etcd__ca.crt"] = []byte("changed")
	if err := rt.apply(t.Context(), secret, types.UID("d0e5c0de-0000-4000-8000-000000000000")); err == nil {
		t.Error("applying over an object with another UID succeeded")
	}
	live := &corev1.Secret{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(secret), live); err != nil {
		t.Fatal(err)
	}
	if string(live.Data["etcd__ca.crt"]) == "changed" {
		t.Error("an apply with another UID changed the Secret")
	}
}

// foreignDeployment is a Deployment someone else made, with labels.
func foreignDeployment(namespace, name string, labels map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "foreign"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "foreign"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "foreign:1"}}},
			},
		},
	}
}

func testForeignObjects(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	foreign := foreignDeployment(ref.Namespace, "kube-apiserver", map[string]string{
		ManagedByLabel: ManagedBy, ControlPlaneLabel: ref.Name, OwnerUIDLabel: "another-owner", ComponentLabel: "kube-apiserver",
	})
	if err := c.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	counting, w := countingClient(t, env)
	rt := New(counting, testOptions())
	err := rt.Apply(t.Context(), ref, clusterSpecs(ref, 1, 1))
	if !errors.Is(err, runtime.ErrNotOwner) {
		t.Fatalf("Apply over a foreign Deployment: %v, want ErrNotOwner", err)
	}
	if w.count() != 0 {
		t.Errorf("Apply refused but made %d writes", w.count())
	}
	err = rt.Delete(t.Context(), ref)
	if !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("Delete with a foreign Deployment: %v, want ErrNotOwner", err)
	}
	if w.count() != 0 {
		t.Errorf("Delete refused but made %d writes", w.count())
	}
	live := &appsv1.Deployment{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(foreign), live); err != nil {
		t.Fatalf("the foreign Deployment: %v", err)
	}
	if live.ResourceVersion != foreign.ResourceVersion || live.DeletionTimestamp != nil {
		t.Errorf("the foreign Deployment was changed (resourceVersion %s → %s, deleting %v)", foreign.ResourceVersion, live.ResourceVersion, live.DeletionTimestamp)
	}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "etcd-files"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused Apply created etcd-files: %v", err)
	}
}

// testForeignBehindCache: an operator whose cache holds only its own
// objects (selected by label) still sees a foreign object of the same name,
// through the API reader, and leaves it alone.
func testForeignBehindCache(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	foreign := foreignDeployment(ref.Namespace, "kube-scheduler", nil)
	if err := c.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	selector, err := labels.Parse(ManagedByLabel + "=" + ManagedBy)
	if err != nil {
		t.Fatal(err)
	}
	mgr := newManager(t, env, cache.Options{DefaultLabelSelector: selector})
	opts := testOptions()
	opts.APIReader = mgr.GetAPIReader()
	rt := New(mgr.GetClient(), opts)
	startManager(t, mgr)
	err = rt.Apply(t.Context(), ref, clusterSpecs(ref, 1, 1))
	if !errors.Is(err, runtime.ErrNotOwner) || !strings.Contains(err.Error(), "Deployment kube-scheduler (owner-uid label: none)") {
		t.Fatalf("Apply over an unlabelled Deployment the cache does not hold: %v, want ErrNotOwner naming it", err)
	}
	live := &appsv1.Deployment{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(foreign), live); err != nil {
		t.Fatal(err)
	}
	if live.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("the foreign Deployment was changed (resourceVersion %s → %s)", foreign.ResourceVersion, live.ResourceVersion)
	}
}

func testDelete(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	rt := New(c, testOptions())
	specs := clusterSpecs(ref, 1, 1)
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	// The StatefulSet controller would make this claim from the template,
	// with its labels.
	claimLabels := objectLabels(ref, "etcd")
	claim := testClaim(ref.Namespace, "data-etcd-0", claimLabels)
	foreignClaim := testClaim(ref.Namespace, "data-other-0", map[string]string{ControlPlaneLabel: ref.Name})
	foreignConfig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-apiserver", Namespace: ref.Namespace}}
	for _, obj := range []client.Object{claim, foreignClaim, foreignConfig} {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Delete(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	objs, err := Objects(ref, specs, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range append(objs, claim) {
		gvk := obj.GetObjectKind().GroupVersionKind()
		if gvk.Kind == "" {
			gvk = claimKind
		}
		if !gone(t, c, gvk.Kind, obj) {
			t.Errorf("%s %s survived Delete", gvk.Kind, obj.GetName())
		}
	}
	for _, obj := range []client.Object{foreignClaim, foreignConfig} {
		if gone(t, c, "", obj) {
			t.Errorf("Delete removed %s, which is not the control plane's", obj.GetName())
		}
	}
	if err := c.Get(t.Context(), client.ObjectKey{Name: ref.Namespace}, &corev1.Namespace{}); err != nil {
		t.Errorf("the namespace: %v", err)
	}
}

// gone: obj no longer exists or is being deleted (a claim waits for its
// protection finalizer, which no controller here removes).
func gone(t *testing.T, c client.Client, kind string, obj client.Object) bool {
	t.Helper()
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		t.Fatalf("%T is not an object", obj)
	}
	err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), live)
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatalf("%s %s: %v", kind, obj.GetName(), err)
	}
	return live.GetDeletionTimestamp() != nil
}

func testClaim(namespace, name string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
}

func testPublished(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	rt := New(c, testOptions())
	specs := clusterSpecs(ref, 1, 1)
	if _, _, ok, err := rt.Published(t.Context(), ref, "endpoint"); ok || err != nil {
		t.Errorf("Published before Apply: ok %v, %v", ok, err)
	}
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	host, port, ok, err := rt.Published(t.Context(), ref, "endpoint")
	if err != nil || !ok || host != "203.0.113.10" || port != nodePort(ref) {
		t.Errorf("Published(endpoint) = %s, %d, %v, %v; want the fixed node port %d at 203.0.113.10", host, port, ok, err, nodePort(ref))
	}
	host, port, ok, err = rt.Published(t.Context(), ref, "konnectivity")
	if err != nil || !ok || host != "203.0.113.10" || port < 30000 || port > 32767 {
		t.Errorf("Published(konnectivity) = %s, %d, %v, %v; want the node port the API server allocated", host, port, ok, err)
	}

	for i := range specs {
		if specs[i].Component == "konnectivity-server" {
			specs[i].Publish = []runtime.Publish{{Name: "konnectivity", Port: "agent", Type: runtime.LoadBalancer, Address: "konnectivity.example.com"}}
		}
	}
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := rt.Published(t.Context(), ref, "konnectivity"); ok || err != nil {
		t.Errorf("Published(konnectivity) before the load balancer has an address: ok %v, %v", ok, err)
	}
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: ref.Namespace, Name: "konnectivity-server-agent-published"}
	if err := c.Get(t.Context(), key, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Fatalf("the published Service is %s, want LoadBalancer", svc.Spec.Type)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb-1.example.com"}}
	if err := c.Status().Update(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	host, port, ok, err = rt.Published(t.Context(), ref, "konnectivity")
	if err != nil || !ok || host != "konnectivity.example.com" || port != 8091 {
		t.Errorf("Published(konnectivity) = %s, %d, %v, %v; want konnectivity.example.com:8091", host, port, ok, err)
	}
	if _, _, ok, err := rt.Published(t.Context(), ref, "metrics"); ok || err != nil {
		t.Errorf("Published(an unpublished port): ok %v, %v", ok, err)
	}
}

// testClaimTemplatesKept: an operator restarted with another default
// storage class and size still applies the control planes it made before
// (claim templates are immutable), and their volumes keep what they were
// made with.
func testClaimTemplatesKept(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	specs := clusterSpecs(ref, 1, 1)
	before := testOptions()
	before.StorageClassName = "old-class"
	if err := New(env.Client, before).Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	after := testOptions()
	after.StorageClassName, after.EtcdStorageSize = "new-class", resource.MustParse("20Gi")
	if err := New(env.Client, after).Apply(t.Context(), ref, specs); err != nil {
		t.Fatalf("Apply with new defaults to a control plane made with others: %v", err)
	}
	sts := &appsv1.StatefulSet{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "etcd"}, sts); err != nil {
		t.Fatal(err)
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Spec
	if claim.StorageClassName == nil || *claim.StorageClassName != "old-class" || !claim.Resources.Requests.Storage().Equal(DefaultEtcdStorageSize) {
		t.Errorf("claim template %v / %v, want the class and size it was made with", claim.StorageClassName, claim.Resources.Requests.Storage())
	}
}

// testDeleteWaitsForPods: Delete stops what reads etcd before etcd: it
// reports ErrStopping naming a running pod of a Deployment and keeps the
// StatefulSet meanwhile; once that pod has ended it deletes the
// StatefulSet and reports its running pod; another owner's pod holds
// nothing back; and past stopWait after the first call it returns nil
// with a pod left (its node gone).
func testDeleteWaitsForPods(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	rt := New(c, testOptions())
	now := time.Now()
	rt.now = func() time.Time { return now }
	if err := rt.Apply(t.Context(), ref, clusterSpecs(ref, 1, 1)); err != nil {
		t.Fatal(err)
	}
	// No controller here makes the namespace's service account.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ref.Namespace}}
	if err := c.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	etcd := &appsv1.StatefulSet{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "etcd"}, etcd); err != nil {
		t.Fatal(err)
	}
	writePod(t, env, ref, "another-owner", "kube-apiserver", "theirs", []string{"kube-apiserver"}, corev1.PodStatus{Phase: corev1.PodRunning})
	writePod(t, env, ref, ref.Owner, "kube-apiserver", "kube-apiserver-1", []string{"kube-apiserver"}, corev1.PodStatus{Phase: corev1.PodRunning})
	writePod(t, env, ref, ref.Owner, "etcd", "etcd-0", []string{"etcd"}, corev1.PodStatus{Phase: corev1.PodRunning})
	etcdPod := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "etcd-0"}, etcdPod); err != nil {
		t.Fatal(err)
	}
	etcdPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "etcd", UID: etcd.UID, Controller: ptr.To(true)}}
	if err := c.Update(t.Context(), etcdPod); err != nil {
		t.Fatal(err)
	}

	err := rt.Delete(t.Context(), ref)
	if !errors.Is(err, runtime.ErrStopping) || !strings.Contains(err.Error(), "kube-apiserver-1") || strings.Contains(err.Error(), "theirs") || strings.Contains(err.Error(), "etcd-0") {
		t.Fatalf("Delete with the API server's pod running: %v, want ErrStopping naming kube-apiserver-1 alone", err)
	}
	if gone(t, c, "StatefulSet", etcd) {
		t.Error("Delete deleted etcd's StatefulSet while the API server's pod ran")
	}
	if !gone(t, c, "Deployment", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: "kube-apiserver"}}) {
		t.Error("Delete kept the API server's Deployment")
	}
	// Its pod ends (it has no node: deleted at once).
	if err := c.Delete(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: "kube-apiserver-1"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(stopWait - time.Second)
	err = rt.Delete(t.Context(), ref)
	if !errors.Is(err, runtime.ErrStopping) || !strings.Contains(err.Error(), "etcd-0") {
		t.Fatalf("Delete with etcd's pod running: %v, want ErrStopping naming etcd-0", err)
	}
	if !gone(t, c, "StatefulSet", etcd) {
		t.Error("Delete kept etcd's StatefulSet once the API server's pod had ended")
	}
	now = now.Add(time.Second)
	if err := rt.Delete(t.Context(), ref); err != nil {
		t.Fatalf("Delete past stopWait with etcd's pod left: %v, want nil", err)
	}
	if len(rt.deleting) != 0 {
		t.Errorf("Delete keeps %v after it returned nil", rt.deleting)
	}
}
