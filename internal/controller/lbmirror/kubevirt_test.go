package lbmirror

import (
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/kubeconfig"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// kvFixture: a management plane that is also the external infrastructure
// cluster (namespace guests, reached through the kubeconfig of the user's
// Secret, as another cluster would be), and a hosted cluster.
type kvFixture struct {
	c    client.Client
	kube kubernetes.Interface
	r    *Reconciler
	kc   []byte
}

const infraNamespace = "guests"

func setUpKubeVirt(t *testing.T) *kvFixture {
	t.Helper()
	mgmt, guest := testenv.Start(t), testenv.Start(t)
	c := mgmt.FastClient(t)
	testenv.InstallClusterAPICRDs(t, c, "machines")
	kube, err := kubernetes.NewForConfig(guest.FastConfig())
	must(t, err)
	for _, ns := range []string{"clusters", "clusters-kv", "clusters-local", infraNamespace} {
		must(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		// The plane runs no ServiceAccount controller; pods need theirs.
		must(t, c.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}))
	}
	_, err = kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guestNamespace}}, metav1.CreateOptions{})
	must(t, err)
	f := &kvFixture{c: c, kube: kube, r: &Reconciler{Client: c, APIReader: c, Limits: DefaultLimits}, kc: inlineKubeconfig(t, mgmt.RESTConfig)}
	f.secret(t, "infra", f.kc)
	return f
}

// inlineKubeconfig is cfg's kubeconfig with inline credentials, as a user
// hands one over in a Secret.
func inlineKubeconfig(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	read := func(data []byte, file string) []byte {
		if len(data) > 0 || file == "" {
			return data
		}
		b, err := os.ReadFile(file)
		must(t, err)
		return b
	}
	kc, err := kubeconfig.Render(kubeconfig.Params{
		Name: "infra", Server: cfg.Host, CAPEM: read(cfg.CAData, cfg.CAFile),
		ClientPEM: read(cfg.CertData, cfg.CertFile), KeyPEM: read(cfg.KeyData, cfg.KeyFile), Token: cfg.BearerToken,
	})
	must(t, err)
	return kc
}

func (f *kvFixture) secret(t *testing.T, name string, kc []byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name}, Data: map[string][]byte{"kubeconfig": kc}}
	must(t, client.IgnoreAlreadyExists(f.c.Create(t.Context(), s)))
	s.Data["kubeconfig"] = kc
	must(t, f.c.Update(t.Context(), s))
}

func (f *kvFixture) cluster(t *testing.T, name, secret string) *hypershiftv1alpha1.HostedCluster {
	t.Helper()
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", name, hypershiftv1alpha1.KubeVirtPlatform, version.KubernetesVersion)
	hc.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtPlatformSpec{}
	if secret != "" {
		hc.Spec.Platform.KubeVirt.Credentials = &hypershiftv1alpha1.KubeVirtPlatformCredentials{
			InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: secret, Key: "kubeconfig"},
			InfraNamespace:        infraNamespace,
		}
	}
	must(t, f.c.Create(t.Context(), hc))
	return hc
}

// machine makes a Machine of infrastructure kind (CAPK's KubevirtMachine)
// vm in namespace ns, in phase, with Node node (none when empty),
// reporting agentIP as its address, as CAPK copies the VMI's guest-agent
// addresses.
func (f *kvFixture) machine(t *testing.T, ns, kind, vm, phase, node, agentIP string) *unstructured.Unstructured {
	t.Helper()
	m := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName":       "kv",
		"bootstrap":         map[string]any{"dataSecretName": vm},
		"infrastructureRef": map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": kind, "name": vm},
	}}}
	m.SetGroupVersionKind(machineListGVK.GroupVersion().WithKind("Machine"))
	m.SetNamespace(ns)
	m.SetName(vm)
	must(t, f.c.Create(t.Context(), m))
	status := map[string]any{"phase": phase, "addresses": []any{map[string]any{"type": "InternalIP", "address": agentIP}}}
	if node != "" {
		status["nodeRef"] = map[string]any{"name": node}
	}
	m.Object["status"] = status
	must(t, f.c.Status().Update(t.Context(), m))
	return m
}

// launcher makes a virt-launcher pod of VMI vmi (owner: the controller
// kind of KubeVirt's, or another) of cluster uid, running and ready at ip,
// started at start, as KubeVirt and the kubelet make and report it.
func (f *kvFixture) launcher(t *testing.T, ns, name, ownerAPIVersion, ownerKind, vmi, uid, ip string, start time.Time) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{launcherLabel: launcherValue, hostedref.ClusterUIDLabel: uid},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: ownerAPIVersion, Kind: ownerKind, Name: vmi, UID: types.UID("vmi-" + name), Controller: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: "virt-launcher"}}},
	}
	must(t, f.c.Create(t.Context(), p))
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &metav1.Time{Time: start},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	must(t, f.c.Status().Update(t.Context(), p))
}

func (f *kvFixture) mirror(t *testing.T, ns string, g *corev1.Service) *corev1.Service {
	t.Helper()
	return (&fixture{c: f.c}).mirrorIn(t, ns, g)
}

func (f *kvFixture) guest(t *testing.T, name string) *corev1.Service {
	t.Helper()
	return (&fixture{kube: f.kube}).guest(t, name, false)
}

func (f *kvFixture) endpoints(t *testing.T, m *corev1.Service) []string {
	t.Helper()
	return (&fixture{c: f.c}).endpoints(t, m)
}

func TestKubeVirtLoadBalancerMirror(t *testing.T) {
	f := setUpKubeVirt(t)
	ctx := t.Context()
	hc := f.cluster(t, "kv", "infra")
	uid := string(hc.UID)
	now := time.Now()
	// vm1 runs; vm2 is being live-migrated (two ready launcher pods: the
	// VM runs in the older until the migration ends). vm3 is provisioned,
	// vm4 has no Node yet, vm5 is not CAPK's, vm6 is being deleted. Pods
	// of vm1's name controlled by another kind, or by a
	// VirtualMachineInstance of another group, or of another cluster, are
	// no launchers of this cluster. The Machines' own addresses (the guest
	// agent's) are never used.
	const kv = "kubevirt.io/v1"
	f.machine(t, "clusters-kv", kubevirtKind, "vm1", "Running", "vm1", "192.0.2.66")
	f.machine(t, "clusters-kv", kubevirtKind, "vm2", "Running", "vm2", "192.0.2.67")
	f.machine(t, "clusters-kv", kubevirtKind, "vm3", "Provisioning", "", "192.0.2.68")
	f.machine(t, "clusters-kv", kubevirtKind, "vm4", "Running", "", "192.0.2.69")
	f.machine(t, "clusters-kv", "HostMachine", "vm5", "Running", "vm5", "192.0.2.70")
	vm6 := f.machine(t, "clusters-kv", kubevirtKind, "vm6", "Running", "vm6", "192.0.2.71")
	vm6.SetFinalizers([]string{"example.dev/hold"})
	must(t, f.c.Update(ctx, vm6))
	must(t, f.c.Delete(ctx, vm6))
	t.Cleanup(func() {
		vm6.SetFinalizers(nil)
		_ = f.c.Update(context.Background(), vm6)
	})
	must(t, f.c.Get(ctx, client.ObjectKeyFromObject(vm6), vm6))
	f.launcher(t, infraNamespace, "virt-launcher-vm1-a", kv, vmiKind, "vm1", uid, "10.1.0.1", now)
	f.launcher(t, infraNamespace, "virt-launcher-vm2-a", kv, vmiKind, "vm2", uid, "10.1.0.2", now.Add(-time.Hour))
	f.launcher(t, infraNamespace, "virt-launcher-vm2-b", kv, vmiKind, "vm2", uid, "10.1.0.22", now)
	for i, vm := range []string{"vm3", "vm4", "vm5", "vm6"} {
		f.launcher(t, infraNamespace, "virt-launcher-"+vm+"-a", kv, vmiKind, vm, uid, "10.1.0."+itoa(int32(3+i)), now)
	}
	f.launcher(t, infraNamespace, "forged-vm1", kv, "ReplicaSet", "vm1", uid, "10.9.9.9", now.Add(-2*time.Hour))
	f.launcher(t, infraNamespace, "forged-group-vm1", "example.com/v1", vmiKind, "vm1", uid, "10.9.9.7", now.Add(-2*time.Hour))
	f.launcher(t, infraNamespace, "other-vm1", kv, vmiKind, "vm1", "another-cluster", "10.9.9.8", now.Add(-2*time.Hour))

	g := f.guest(t, "web")
	pass := func() {
		t.Helper()
		if err := f.r.Pass(ctx, hc, f.kube); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	pass()
	if m := f.mirror(t, "clusters-kv", g); m != nil {
		t.Fatalf("a mirror in the control-plane namespace, not the infrastructure cluster's: %s", m.Name)
	}
	m := f.mirror(t, infraNamespace, g)
	if m == nil {
		t.Fatal("no mirror in the infrastructure namespace")
	}
	g, err := f.kube.CoreV1().Services(guestNamespace).Get(ctx, g.Name, metav1.GetOptions{})
	must(t, err)
	np := itoa(g.Spec.Ports[0].NodePort)
	if got, want := f.endpoints(t, m), []string{"IPv4 10.1.0.1:" + np, "IPv4 10.1.0.2:" + np}; !slices.Equal(got, want) {
		t.Fatalf("endpoints %v, want %v: the ready launchers of running machines with Nodes, the older of a migrating VM", got, want)
	}
	must(t, f.c.Get(ctx, client.ObjectKeyFromObject(hc), hc))
	if !controllerutil.ContainsFinalizer(hc, ClusterFinalizer) {
		t.Fatalf("finalizers %v: no %s for a mirror outside the control-plane namespace", hc.Finalizers, ClusterFinalizer)
	}

	// The infrastructure's load balancer gives the mirror an address; it
	// reaches the guest.
	m.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	must(t, f.c.Status().Update(ctx, m))
	pass()
	g, err = f.kube.CoreV1().Services(guestNamespace).Get(ctx, g.Name, metav1.GetOptions{})
	must(t, err)
	if ing := g.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].IP != "203.0.113.7" {
		t.Fatalf("guest status %+v, want the mirror's address", g.Status.LoadBalancer)
	}

	t.Run("a kubeconfig with an exec plugin is refused, naming the Secret", func(t *testing.T) {
		cfg, err := clientcmd.Load(f.kc)
		must(t, err)
		for _, u := range cfg.AuthInfos {
			u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1"}
		}
		bad, err := clientcmd.Write(*cfg)
		must(t, err)
		f.secret(t, "infra", bad)
		err = f.r.Pass(ctx, hc, f.kube)
		if err == nil || !strings.Contains(err.Error(), "secret clusters/infra") || !strings.Contains(err.Error(), "exec") {
			t.Fatalf("pass with an exec kubeconfig: %v", err)
		}
		f.secret(t, "infra", f.kc)
	})

	t.Run("without credentials the mirror is in the control-plane namespace", func(t *testing.T) {
		local := f.cluster(t, "local", "")
		f.machine(t, "clusters-local", kubevirtKind, "vm9", "Running", "vm9", "192.0.2.72")
		f.launcher(t, "clusters-local", "virt-launcher-vm9-a", kv, vmiKind, "vm9", string(local.UID), "10.1.0.9", now)
		if err := f.r.Pass(ctx, local, f.kube); err != nil {
			t.Fatal(err)
		}
		lm := f.mirror(t, "clusters-local", g)
		if lm == nil {
			t.Fatal("no mirror in the control-plane namespace")
		}
		if got, want := f.endpoints(t, lm), []string{"IPv4 10.1.0.9:" + np}; !slices.Equal(got, want) {
			t.Fatalf("endpoints %v, want %v", got, want)
		}
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(local), local))
		if controllerutil.ContainsFinalizer(local, ClusterFinalizer) {
			t.Fatal("a cluster finalizer for mirrors that go with the control-plane namespace")
		}
	})

	t.Run("an infrastructure cluster that fails is waited for, then let go", func(t *testing.T) {
		failing := f.cluster(t, "failing", "refusing")
		f.secret(t, "refusing", inlineKubeconfig(t, &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: caOf(t, f.kc)}, BearerToken: "x"}))
		controllerutil.AddFinalizer(failing, ClusterFinalizer)
		must(t, f.c.Update(ctx, failing))
		must(t, f.c.Delete(ctx, failing))
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(failing), failing))
		if done, err := f.r.Finalize(ctx, failing); done || err == nil {
			t.Fatalf("Finalize: done %v, %v; want it to wait", done, err)
		}
		r := *f.r
		r.GiveUpAfter = time.Nanosecond
		if done, err := r.Finalize(ctx, failing); !done || err == nil {
			t.Fatalf("Finalize past GiveUpAfter: done %v, %v; want done, with the error", done, err)
		}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(failing), failing); !apierrors.IsNotFound(err) {
			t.Fatalf("the cluster is still there (%v)", err)
		}
	})

	t.Run("the cluster's deletion deletes its mirrors in the infrastructure cluster", func(t *testing.T) {
		// The user's Secret went with the cluster: the control-plane
		// namespace's copy, labelled as this cluster's, is used.
		must(t, f.c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "infra"}}))
		must(t, f.c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-kv", Name: "kv-infra-kubeconfig", Labels: map[string]string{hostedref.OwnerUIDLabel: uid}},
			Data:       map[string][]byte{"kubeconfig": f.kc},
		}))
		must(t, f.c.Delete(ctx, hc))
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(hc), hc))
		done, err := f.r.Finalize(ctx, hc)
		if done || err == nil {
			t.Fatalf("first Finalize: done %v, %v; want it to wait for the deleted mirror", done, err)
		}
		if m := f.mirror(t, infraNamespace, g); m != nil {
			t.Fatalf("mirror %s still there", m.Name)
		}
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(hc), hc))
		if done, err = f.r.Finalize(ctx, hc); !done || err != nil {
			t.Fatalf("second Finalize: done %v, %v", done, err)
		}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(hc), hc); !apierrors.IsNotFound(err) {
			t.Fatalf("the cluster is still there (%v): finalizers %v", err, hc.Finalizers)
		}
	})

	t.Run("an infrastructure cluster that cannot be reached does not hold the deletion", func(t *testing.T) {
		gone := f.cluster(t, "gone", "missing")
		controllerutil.AddFinalizer(gone, ClusterFinalizer)
		must(t, f.c.Update(ctx, gone))
		must(t, f.c.Delete(ctx, gone))
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(gone), gone))
		done, err := f.r.Finalize(ctx, gone)
		if !done || err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("Finalize: done %v, %v; want done, naming the missing Secret", done, err)
		}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(gone), gone); !apierrors.IsNotFound(err) {
			t.Fatalf("the cluster is still there (%v)", err)
		}
	})
}

// caOf is the CA of kubeconfig kc.
func caOf(t *testing.T, kc []byte) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kc)
	must(t, err)
	for _, c := range cfg.Clusters {
		return c.CertificateAuthorityData
	}
	t.Fatal("no cluster")
	return nil
}

// The client of an infrastructure cluster follows no redirect and reads
// no response past MaxResponseBytes.
func TestInfrastructureClientIsBounded(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, "/pods") {
			http.Redirect(w, req, "http://127.0.0.1:1/internal", http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"ServiceList","apiVersion":"v1","metadata":{},"items":[],"padding":"`)
		_, _ = io.Copy(w, io.LimitReader(spaces{}, MaxResponseBytes))
		_, _ = io.WriteString(w, `"}`)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := inlineKubeconfig(t, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, BearerToken: "t"})
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "kv", hypershiftv1alpha1.KubeVirtPlatform, version.KubernetesVersion)
	hc.Spec.Platform.KubeVirt = &hypershiftv1alpha1.KubeVirtPlatformSpec{Credentials: &hypershiftv1alpha1.KubeVirtPlatformCredentials{
		InfraKubeConfigSecret: hypershiftv1alpha1.KubeconfigSecretRef{Name: "infra", Key: "kubeconfig"}, InfraNamespace: infraNamespace,
	}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "infra"}, Data: map[string][]byte{"kubeconfig": kc}}
	c := fake.NewClientBuilder().WithObjects(secret).Build()
	r := &Reconciler{Client: c, APIReader: c, Limits: DefaultLimits}
	in, err := r.infraOf(t.Context(), hc, false)
	must(t, err)
	defer in.close()
	err = in.reader.List(t.Context(), &corev1.PodList{}, client.InNamespace(infraNamespace))
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("a redirect: %v; want it refused", err)
	}
	err = in.reader.List(t.Context(), &corev1.ServiceList{}, client.InNamespace(infraNamespace))
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a response past the bound: %v; want it cut", err)
	}
}

type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// An infrastructure cluster's response is read only up to
// MaxResponseBytes.
func TestBoundedBodies(t *testing.T) {
	b := &boundedBody{ReadCloser: io.NopCloser(io.LimitReader(zeros{}, MaxResponseBytes+1)), left: MaxResponseBytes}
	n, err := io.Copy(io.Discard, b)
	if err == nil || n != MaxResponseBytes {
		t.Fatalf("read %d bytes, %v; want %d and an error", n, err, MaxResponseBytes)
	}
	b = &boundedBody{ReadCloser: io.NopCloser(io.LimitReader(zeros{}, MaxResponseBytes)), left: MaxResponseBytes}
	if n, err := io.Copy(io.Discard, b); err != nil || n != MaxResponseBytes {
		t.Fatalf("read %d bytes, %v; want all %d", n, err, MaxResponseBytes)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// KubeVirt clusters get mirrors on every runtime; Host clusters only
// where their machines are pods; the others never.
func TestApplies(t *testing.T) {
	for _, c := range []struct {
		platform hypershiftv1alpha1.PlatformType
		pods     bool
		want     bool
	}{
		{hypershiftv1alpha1.KubeVirtPlatform, false, true},
		{hypershiftv1alpha1.KubeVirtPlatform, true, true},
		{hypershiftv1alpha1.HostPlatform, true, true},
		{hypershiftv1alpha1.HostPlatform, false, false},
		{hypershiftv1alpha1.AWSPlatform, true, false},
		{hypershiftv1alpha1.NonePlatform, true, false},
	} {
		hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", c.platform, version.KubernetesVersion)
		if got := (&Reconciler{HostMachinePods: c.pods}).applies(hc); got != c.want {
			t.Errorf("%s with machine pods %v: applies %v, want %v", c.platform, c.pods, got, c.want)
		}
	}
}

// endless hands out a continue token with every page.
type endless struct {
	client.Reader
	pages int
}

func (e *endless) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	e.pages++
	list.(*corev1.PodList).Continue = "more"
	return nil
}

// A server that always has another page is read for maxPages pages, then
// refused.
func TestListPagesIsBounded(t *testing.T) {
	e := &endless{}
	err := listPages(t.Context(), e, 100, func() *corev1.PodList { return &corev1.PodList{} }, func(*corev1.PodList) {})
	if err == nil || e.pages != maxPages {
		t.Fatalf("%d pages read, %v; want %d and an error", e.pages, err, maxPages)
	}
}
