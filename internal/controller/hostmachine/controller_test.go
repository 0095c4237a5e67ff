package hostmachine_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/hostmachine"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/machine"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

var machineGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}

const ns = "clusters-dev"

// fixture is a management plane with Cluster API's Machine kind and the
// namespace clusters-dev.
type fixture struct {
	c   client.Client
	cfg *rest.Config
}

func setUp(t *testing.T) *fixture {
	t.Helper()
	env := testenv.Start(t)
	cfg, c := env.FastConfig(), env.FastClient(t)
	testenv.InstallClusterAPICRDs(t, c, "machines")
	// clusters-dev is the control-plane namespace of HostedCluster
	// clusters/dev, labelled as the operator labels it.
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "dev", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	must(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hc.Namespace}}))
	must(t, c.Create(t.Context(), hc))
	owner := map[string]string{
		hostedref.ClusterNamespaceLabel: hc.Namespace, hostedref.ClusterNameLabel: hc.Name, hostedref.ClusterUIDLabel: string(hc.UID),
	}
	must(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: owner}}))
	// Namespaces whose HostMachines get no machine: a plain one, and one
	// labelled as clusters-dev is.
	must(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}))
	must(t, c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "impostor", Labels: owner}}))
	return &fixture{c: c, cfg: cfg}
}

// machines is a machines directory of the test with a network of its own
// (a random /28 of 10.213/16); its machines and network are deleted when
// the test ends. Without root the test is skipped, saying why.
func machines(t *testing.T) *machine.Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: machines need root (namespaces, mounts, links); run the tests as root")
	}
	h := &machine.Host{Dir: filepath.Join(t.TempDir(), "machines")}
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	if _, err := h.EnsureNetwork(fmt.Sprintf("10.213.%d.%d/28", b[0], 16*(int(b[0])%16))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ms, _ := h.List()
		for _, m := range ms {
			if err := h.Delete(context.Background(), m.Name, nil); err != nil {
				t.Errorf("delete machine %s: %v", m.Name, err)
			}
		}
		if err := h.DeleteNetwork(); err != nil {
			t.Errorf("delete the network: %v", err)
		}
	})
	return h
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) hostMachine(t *testing.T, namespace, name string) *hypershiftv1alpha1.HostMachine {
	t.Helper()
	hm := &hypershiftv1alpha1.HostMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "dev"},
	}}
	must(t, f.c.Create(t.Context(), hm))
	return hm
}

// machine makes the Machine of hm, naming dataSecret (none when empty),
// and makes it hm's controller, as Cluster API does.
func (f *fixture) machine(t *testing.T, hm *hypershiftv1alpha1.HostMachine, dataSecret string) *unstructured.Unstructured {
	t.Helper()
	bootstrap := map[string]any{"configRef": map[string]any{"apiGroup": "hypershift.dev", "kind": "JoinConfig", "name": hm.Name}}
	m := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"clusterName":       "dev",
		"bootstrap":         bootstrap,
		"infrastructureRef": map[string]any{"apiGroup": "hypershift.dev", "kind": "HostMachine", "name": hm.Name},
	}}}
	m.SetGroupVersionKind(machineGVK)
	m.SetNamespace(hm.Namespace)
	m.SetName(hm.Name)
	must(t, f.c.Create(t.Context(), m))
	if dataSecret != "" {
		f.setDataSecret(t, m, dataSecret)
	}
	got := &hypershiftv1alpha1.HostMachine{}
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(hm), got))
	got.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: machineGVK.GroupVersion().String(), Kind: machineGVK.Kind, Name: m.GetName(), UID: m.GetUID(), Controller: ptr.To(true),
	}}
	must(t, f.c.Update(t.Context(), got))
	return m
}

func (f *fixture) setDataSecret(t *testing.T, m *unstructured.Unstructured, name string) {
	t.Helper()
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(m), m))
	must(t, unstructured.SetNestedField(m.Object, name, "spec", "bootstrap", "dataSecretName"))
	must(t, f.c.Update(t.Context(), m))
}

func (f *fixture) secret(t *testing.T, namespace, name string, typ corev1.SecretType, userdata string) {
	t.Helper()
	must(t, f.c.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       typ,
		Data:       map[string][]byte{"value": []byte(userdata), "format": []byte("cloud-config")},
	}))
}

// ready makes a HostMachine of clusters-dev whose Machine names a
// bootstrap Secret with userdata.
func (f *fixture) ready(t *testing.T, name, userdata string) *hypershiftv1alpha1.HostMachine {
	t.Helper()
	hm := f.hostMachine(t, ns, name)
	f.secret(t, ns, name+"-data", hostmachine.DataSecretType, userdata)
	f.machine(t, hm, name+"-data")
	return hm
}

func reconcile(t *testing.T, r *hostmachine.Reconciler, hm *hypershiftv1alpha1.HostMachine) (ctrl.Result, *hypershiftv1alpha1.HostMachine) {
	t.Helper()
	ctx := ctrl.LoggerInto(t.Context(), testenv.Logger())
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hm)})
	must(t, err)
	got := &hypershiftv1alpha1.HostMachine{}
	if err := r.Client.Get(t.Context(), client.ObjectKeyFromObject(hm), got); apierrors.IsNotFound(err) {
		return res, nil
	} else if err != nil {
		t.Fatal(err)
	}
	return res, got
}

func readyCondition(conds []metav1.Condition) *metav1.Condition {
	return meta.FindStatusCondition(conds, hostmachine.ReadyCondition.String())
}

// wantReady fails unless Ready has that status and reason, and a message
// with each of contains.
func wantReady(t *testing.T, what string, conds []metav1.Condition, status metav1.ConditionStatus, reason hypershiftv1alpha1.ConditionReason, contains ...string) {
	t.Helper()
	c := readyCondition(conds)
	if c == nil || c.Status != status || c.Reason != reason.String() {
		t.Fatalf("%s: Ready %+v, want %s %s", what, c, status, reason)
	}
	for _, s := range contains {
		if !strings.Contains(c.Message, s) {
			t.Errorf("%s: Ready's message %q lacks %q", what, c.Message, s)
		}
	}
}

// untilUserdataEnds reconciles until Ready no longer says the userdata
// runs.
func untilUserdataEnds(t *testing.T, r *hostmachine.Reconciler, hm *hypershiftv1alpha1.HostMachine) *hypershiftv1alpha1.HostMachine {
	t.Helper()
	var got *hypershiftv1alpha1.HostMachine
	testenv.Eventually(t, 20*time.Second, "the userdata of "+hm.Name+" to end", func() (bool, error) {
		_, got = reconcile(t, r, hm)
		c := readyCondition(got.Status.Conditions)
		return c != nil && c.Reason != hostmachine.UserdataRunningReason.String(), nil
	})
	return got
}

// runs counts the lines the userdata `echo run >> /var/lib/runs` wrote in
// the machine.
func runs(t *testing.T, h *machine.Host, name string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.Dir, name, "root", "var-lib", "runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	must(t, err)
	return strings.Count(string(data), "\n")
}

// TestHostMachineProvider runs the HostCluster and HostMachine controllers'
// passes against one management plane, case after case.
func TestHostMachineProvider(t *testing.T) {
	f := setUp(t)
	t.Run("without a machines directory both kinds say so and hold nothing", func(t *testing.T) { withoutMachines(t, f) })
	t.Run("bootstrap data that is not one, and a namespace that is not a control plane's, are refused before a machine is made", func(t *testing.T) { refusesBootstrapData(t, f) })
	t.Run("a HostCluster is provisioned when there is a machine network", func(t *testing.T) { hostCluster(t, f) })
	t.Run("a HostMachine waits for its Machine and bootstrap data, then runs its userdata once", func(t *testing.T) { runsUserdataOnce(t, f) })
	t.Run("a failed userdata is reported with the end of its log", func(t *testing.T) { failedUserdata(t, f) })
	t.Run("a machine that is not the HostMachine's is never touched", func(t *testing.T) { othersMachines(t, f) })
	t.Run("no machine is made beyond --max-machines", func(t *testing.T) { machineLimit(t, f) })
	t.Run("a machine deleted from outside is reported gone and not made again", func(t *testing.T) { machineGone(t, f) })
	t.Run("deleting a HostMachine deletes its machine", func(t *testing.T) { deletes(t, f) })
	t.Run("a machine a runtime makes in steps is provisioned with its address, and held until its deletion is done", func(t *testing.T) { machineInSteps(t, f) })
}

// stepMachines is a runtime.Machines whose one machine is as the test
// says, as the kube runtime's pods are: made Starting without an
// address, deleted over several calls.
type stepMachines struct {
	made    *runtime.MachineRef
	now     runtime.Machine
	deletes int
}

func (*stepMachines) Where() string                        { return "the test's machines" }
func (*stepMachines) Check(context.Context) error          { return nil }
func (m *stepMachines) Count(context.Context) (int, error) { return 0, nil }
func (m *stepMachines) Get(_ context.Context, ref runtime.MachineRef) (runtime.Machine, error) {
	if m.made == nil || m.deletes >= 2 {
		return runtime.Machine{}, runtime.ErrMachineNotFound
	}
	return m.now, nil
}

func (m *stepMachines) Create(_ context.Context, ref runtime.MachineRef, _ []byte) (runtime.Machine, error) {
	m.made = &ref
	m.now = runtime.Machine{Name: ref.Name, Owner: ref.Owner, State: runtime.MachineStarting, Message: "its pod is Pending, not scheduled yet"}
	return m.now, nil
}

func (m *stepMachines) Delete(context.Context, runtime.MachineRef) (bool, error) {
	m.deletes++
	return m.deletes >= 2, nil
}

func machineInSteps(t *testing.T, f *fixture) {
	m := &stepMachines{}
	r := &hostmachine.Reconciler{Client: f.c, Machines: m, OwnerPrefix: "plane/"}
	hm := f.ready(t, "m10", "true\n")
	_, got := reconcile(t, r, hm)
	wantReady(t, "starting", got.Status.Conditions, metav1.ConditionFalse, hostmachine.MachineStartingReason, "not scheduled yet")
	if got.Status.Initialization.Provisioned != nil || got.Spec.ProviderID != "" {
		t.Errorf("a machine without an address is provisioned: %v, providerID %q", got.Status.Initialization.Provisioned, got.Spec.ProviderID)
	}
	ns := &corev1.Namespace{}
	must(t, f.c.Get(t.Context(), client.ObjectKey{Name: got.Namespace}, ns))
	if want := (runtime.MachineRef{Namespace: got.Namespace, Cluster: ns.Labels[hostedref.ClusterUIDLabel], Name: "m10", Owner: "plane/" + string(got.UID), ProviderID: "hypershift-host://m10"}); m.made == nil || *m.made != want {
		t.Errorf("the machine was made as %+v, want %+v", m.made, want)
	}

	m.now.State, m.now.Address = runtime.MachineRunning, netip.MustParseAddr("10.0.0.5")
	_, got = reconcile(t, r, hm)
	wantReady(t, "running", got.Status.Conditions, metav1.ConditionTrue, hostmachine.UserdataRunningReason)
	if !ptr.Deref(got.Status.Initialization.Provisioned, false) || got.Spec.ProviderID != "hypershift-host://m10" ||
		len(got.Status.Addresses) == 0 || got.Status.Addresses[0].Address != "10.0.0.5" {
		t.Errorf("a running machine: provisioned %v, providerID %q, addresses %v", got.Status.Initialization.Provisioned, got.Spec.ProviderID, got.Status.Addresses)
	}

	must(t, f.c.Delete(t.Context(), got))
	if _, got = reconcile(t, r, hm); got == nil {
		t.Fatal("the HostMachine went before its machine's deletion was done")
	}
	wantReady(t, "deleting", got.Status.Conditions, metav1.ConditionFalse, hostmachine.DeletingReason)
	if _, got = reconcile(t, r, hm); got != nil {
		t.Errorf("the HostMachine stays after its machine's deletion is done (finalizers %v)", got.Finalizers)
	}
}

func withoutMachines(t *testing.T, f *fixture) {
	hc := &hypershiftv1alpha1.HostCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-machines"}}
	must(t, f.c.Create(t.Context(), hc))
	cr := &hostmachine.ClusterReconciler{Client: f.c}
	_, err := cr.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hc)})
	must(t, err)
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(hc), hc))
	wantReady(t, "HostCluster", hc.Status.Conditions, metav1.ConditionFalse, hostmachine.NoMachineNetworkReason, "--machines-dir")
	if hc.Status.Initialization.Provisioned != nil {
		t.Errorf("HostCluster provisioned %v without a machine network", *hc.Status.Initialization.Provisioned)
	}
	// A machines directory without a network.
	cr.Machines = machine.Provider{Host: machine.Host{Dir: t.TempDir()}}
	_, err = cr.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hc)})
	must(t, err)
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(hc), hc))
	wantReady(t, "HostCluster", hc.Status.Conditions, metav1.ConditionFalse, hostmachine.NoMachineNetworkReason, "hypershift machine network")

	hm := f.ready(t, "no-machines", "true\n")
	_, got := reconcile(t, &hostmachine.Reconciler{Client: f.c}, hm)
	wantReady(t, "HostMachine", got.Status.Conditions, metav1.ConditionFalse, hostmachine.NoMachineNetworkReason, "--machines-dir")
	if len(got.Finalizers) != 0 || got.Spec.ProviderID != "" {
		t.Errorf("finalizers %v, provider ID %q: want none without a machines directory", got.Finalizers, got.Spec.ProviderID)
	}
	must(t, f.c.Delete(t.Context(), got))
}

func refusesBootstrapData(t *testing.T, f *fixture) {
	// Not a machines directory: a machine made would fail the test.
	none := machine.Host{Dir: filepath.Join(t.TempDir(), "none")}
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: none}}
	for _, c := range []struct {
		namespace, name, userdata string
		typ                       corev1.SecretType
		reason                    hypershiftv1alpha1.ConditionReason
		want                      string
	}{
		{ns, "wrong-type", "true\n", corev1.SecretTypeOpaque, hostmachine.InvalidBootstrapDataReason, "not a bootstrap data Secret"},
		{ns, "too-large", strings.Repeat("#", hostmachine.MaxUserdata+1), hostmachine.DataSecretType, hostmachine.InvalidBootstrapDataReason, "more than 65536"},
		{ns, "empty", "", hostmachine.DataSecretType, hostmachine.InvalidBootstrapDataReason, "no userdata"},
		{"plain", "plain", "true\n", hostmachine.DataSecretType, hostmachine.NotInControlPlaneNamespaceReason, "Namespace plain is not a control-plane namespace"},
		{"impostor", "impostor", "true\n", hostmachine.DataSecretType, hostmachine.NotInControlPlaneNamespaceReason, "not the control-plane namespace of HostedCluster clusters/dev"},
	} {
		hm := f.hostMachine(t, c.namespace, c.name)
		f.secret(t, c.namespace, c.name+"-data", c.typ, c.userdata)
		f.machine(t, hm, c.name+"-data")
		_, got := reconcile(t, r, hm)
		wantReady(t, c.name, got.Status.Conditions, metav1.ConditionFalse, c.reason, c.want)
		if got.Status.Initialization.Provisioned != nil {
			t.Errorf("%s: provisioned", c.name)
		}
		// It goes: the directory holds no machine of its.
		must(t, f.c.Delete(t.Context(), got))
		if _, got = reconcile(t, r, hm); got != nil {
			t.Errorf("%s: still there after its deletion (finalizers %v)", c.name, got.Finalizers)
		}
	}
	if _, err := os.Stat(none.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was made in %s: %v", none.Dir, err)
	}
}

func hostCluster(t *testing.T, f *fixture) {
	h := machines(t)
	hc := &hypershiftv1alpha1.HostCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dev"}}
	must(t, f.c.Create(t.Context(), hc))
	cr := &hostmachine.ClusterReconciler{Client: f.c, Machines: machine.Provider{Host: *h}}
	_, err := cr.Reconcile(t.Context(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(hc)})
	must(t, err)
	must(t, f.c.Get(t.Context(), client.ObjectKeyFromObject(hc), hc))
	n, _ := h.Network()
	wantReady(t, "HostCluster", hc.Status.Conditions, metav1.ConditionTrue, hostmachine.MachineNetworkReadyReason, n.CIDR.String(), n.Gateway.String())
	if !ptr.Deref(hc.Status.Initialization.Provisioned, false) {
		t.Error("HostCluster not provisioned with a machine network")
	}
}

func runsUserdataOnce(t *testing.T, f *fixture) {
	h := machines(t)
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: *h}}
	hm := f.hostMachine(t, ns, "m1")
	_, got := reconcile(t, r, hm)
	wantReady(t, "without a Machine", got.Status.Conditions, metav1.ConditionFalse, hostmachine.WaitingForMachineReason)
	if len(got.Finalizers) != 1 || got.Finalizers[0] != hostmachine.Finalizer {
		t.Errorf("finalizers %v, want %s", got.Finalizers, hostmachine.Finalizer)
	}
	m := f.machine(t, hm, "")
	_, got = reconcile(t, r, hm)
	wantReady(t, "a Machine without bootstrap data", got.Status.Conditions, metav1.ConditionFalse, hostmachine.WaitingForBootstrapDataReason, "spec.bootstrap.dataSecretName")
	f.setDataSecret(t, m, "m1-data")
	res, got := reconcile(t, r, hm)
	wantReady(t, "a Machine whose Secret is not there", got.Status.Conditions, metav1.ConditionFalse, hostmachine.WaitingForBootstrapDataReason, ns+"/m1-data")
	if res.RequeueAfter == 0 {
		t.Error("a waiting HostMachine is not looked at again")
	}
	if ms, _ := h.List(); len(ms) != 0 {
		t.Fatalf("machines %v made before the bootstrap data", ms)
	}
	f.secret(t, ns, "m1-data", hostmachine.DataSecretType, "echo run >> /var/lib/runs\necho hi from $(hostname)\nsleep 1\n")
	_, got = reconcile(t, r, hm)
	wantReady(t, "started", got.Status.Conditions, metav1.ConditionTrue, hostmachine.UserdataRunningReason)
	rec, err := h.Get("m1")
	must(t, err)
	if rec.Owner != string(got.UID) {
		t.Errorf("machine m1's owner %q, want the HostMachine's UID %s", rec.Owner, got.UID)
	}
	if got.Spec.ProviderID != "hypershift-host://m1" || !ptr.Deref(got.Status.Initialization.Provisioned, false) {
		t.Errorf("provider ID %q, provisioned %v", got.Spec.ProviderID, got.Status.Initialization.Provisioned)
	}
	want := []hypershiftv1alpha1.MachineAddress{{Type: "InternalIP", Address: rec.Address.String()}, {Type: "Hostname", Address: "m1"}}
	if fmt.Sprint(got.Status.Addresses) != fmt.Sprint(want) {
		t.Errorf("addresses %v, want %v", got.Status.Addresses, want)
	}
	got = untilUserdataEnds(t, r, hm)
	wantReady(t, "ended", got.Status.Conditions, metav1.ConditionTrue, hostmachine.UserdataSucceededReason)
	// An operator that starts again finds it done.
	restarted := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: machine.Host{Dir: h.Dir}}}
	for range 3 {
		_, got = reconcile(t, restarted, hm)
	}
	wantReady(t, "after a restart", got.Status.Conditions, metav1.ConditionTrue, hostmachine.UserdataSucceededReason)
	if n := runs(t, h, "m1"); n != 1 {
		t.Errorf("the userdata ran %d times, want once", n)
	}
	if log, _ := os.ReadFile(h.UserdataLog("m1")); string(log) != "hi from m1\n" {
		t.Errorf("userdata log %q", log)
	}
}

func failedUserdata(t *testing.T, f *fixture) {
	h := machines(t)
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: *h}}
	hm := f.ready(t, "m2", strings.Repeat("noise\n", 1000)+"echo why it failed >&2\nexit 3\n")
	reconcile(t, r, hm)
	got := untilUserdataEnds(t, r, hm)
	wantReady(t, "failed", got.Status.Conditions, metav1.ConditionFalse, hostmachine.UserdataFailedReason, "status 3", "why it failed")
	if c := readyCondition(got.Status.Conditions); len(c.Message) > 3000 {
		t.Errorf("Ready's message is %d bytes: the log is not bounded", len(c.Message))
	}
	if !ptr.Deref(got.Status.Initialization.Provisioned, false) {
		t.Error("a machine whose userdata failed is not provisioned")
	}
}

// editOwner rewrites the owner in a machine's record, as a person could.
func editOwner(t *testing.T, h *machine.Host, name, owner string) {
	t.Helper()
	path := filepath.Join(h.Dir, name, "machine.json")
	data, err := os.ReadFile(path)
	must(t, err)
	var rec map[string]any
	must(t, json.Unmarshal(data, &rec))
	rec["owner"] = owner
	data, err = json.Marshal(rec)
	must(t, err)
	must(t, os.WriteFile(path, data, 0o600))
}

// othersMachines: a machine made by hand with the HostMachine's name, and
// a HostMachine's own machine whose record was edited to name another
// owner, are reported and left whole, also when the HostMachine goes.
func othersMachines(t *testing.T, f *fixture) {
	h := machines(t)
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: *h}}
	if _, err := h.Create(t.Context(), "m3", []byte("true\n"), nil); err != nil {
		t.Fatal(err)
	}
	hm := f.ready(t, "m3", "echo run >> /var/lib/runs\n")
	_, got := reconcile(t, r, hm)
	wantReady(t, "a name taken by hand", got.Status.Conditions, metav1.ConditionFalse, hostmachine.MachineNameTakenReason, "m3", "left alone")
	must(t, f.c.Delete(t.Context(), got))
	if _, got = reconcile(t, r, hm); got != nil {
		t.Errorf("the HostMachine stays after its deletion (finalizers %v)", got.Finalizers)
	}
	if err := h.Check("m3"); err != nil {
		t.Errorf("the machine made by hand after the HostMachine went: %v", err)
	}
	if n := runs(t, h, "m3"); n != 0 {
		t.Errorf("the HostMachine's userdata ran in a machine made by hand")
	}

	hm = f.ready(t, "m4", "true\n")
	reconcile(t, r, hm)
	if _, err := h.Get("m4"); err != nil {
		t.Fatal(err)
	}
	editOwner(t, h, "m4", "someone-else")
	_, got = reconcile(t, r, hm)
	wantReady(t, "a record naming another owner", got.Status.Conditions, metav1.ConditionFalse, hostmachine.MachineGoneReason, "not this HostMachine's")
	must(t, f.c.Delete(t.Context(), got))
	if _, got = reconcile(t, r, hm); got != nil {
		t.Errorf("the HostMachine stays after its deletion (finalizers %v)", got.Finalizers)
	}
	if err := h.Check("m4"); err != nil {
		t.Errorf("a machine whose record names another owner after the HostMachine went: %v", err)
	}
}

// machineLimit: with the host at its bound (a machine made by hand counts),
// a HostMachine waits with MachineLimitReached and gets its machine once
// one goes.
func machineLimit(t *testing.T, f *fixture) {
	h := machines(t)
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: *h}, MaxMachines: 1}
	if _, err := h.Create(t.Context(), "m8", []byte("true\n"), nil); err != nil {
		t.Fatal(err)
	}
	hm := f.ready(t, "m9", "true\n")
	_, got := reconcile(t, r, hm)
	wantReady(t, "a host at its bound", got.Status.Conditions, metav1.ConditionFalse, hostmachine.MachineLimitReachedReason, "--max-machines 1")
	if _, err := h.Get("m9"); err == nil {
		t.Fatal("a machine was made beyond the bound")
	}
	must(t, h.Delete(t.Context(), "m8", nil))
	if _, got = reconcile(t, r, hm); got == nil || got.Spec.ProviderID == "" {
		t.Fatalf("no machine once the bound allows one: %+v", got)
	}
	if _, err := h.Get("m9"); err != nil {
		t.Errorf("the machine of m9 after one went: %v", err)
	}
}

func machineGone(t *testing.T, f *fixture) {
	h := machines(t)
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: *h}}
	hm := f.ready(t, "m5", "true\n")
	reconcile(t, r, hm)
	must(t, h.Delete(t.Context(), "m5", nil))
	for range 2 {
		_, got := reconcile(t, r, hm)
		wantReady(t, "deleted from outside", got.Status.Conditions, metav1.ConditionFalse, hostmachine.MachineGoneReason, "not made again")
	}
	if _, err := h.Get("m5"); !errors.Is(err, machine.ErrNotFound) {
		t.Errorf("machine m5 after its deletion from outside: %v, want not made again", err)
	}
}

func deletes(t *testing.T, f *fixture) {
	h := machines(t)
	r := &hostmachine.Reconciler{Client: f.c, Machines: machine.Provider{Host: *h}}
	hm := f.ready(t, "m6", "exec sleep 600\n")
	_, got := reconcile(t, r, hm)
	wantReady(t, "running", got.Status.Conditions, metav1.ConditionTrue, hostmachine.UserdataRunningReason)
	must(t, f.c.Delete(t.Context(), got))
	if _, got = reconcile(t, r, hm); got != nil {
		t.Errorf("the HostMachine stays after its deletion (finalizers %v)", got.Finalizers)
	}
	if _, err := h.Get("m6"); !errors.Is(err, machine.ErrNotFound) {
		t.Errorf("machine m6 after its HostMachine was deleted: %v", err)
	}
}

// TestWatchesWakeAWaitingHostMachine runs the controller in a manager: a
// HostMachine waiting for its Machine's bootstrap data is reconciled as
// soon as the Machine names the Secret, and again as soon as the Secret
// appears. Each must happen within wakeBound, far less than the resync of
// a waiting HostMachine (30 s): only the watches on Machines and on
// bootstrap data Secrets pass.
func TestWatchesWakeAWaitingHostMachine(t *testing.T) {
	const wakeBound = 2 * time.Second
	f := setUp(t)
	mgr, err := ctrl.NewManager(f.cfg, ctrl.Options{
		Scheme: f.c.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:     testenv.Logger(),
	})
	must(t, err)
	// Not a machines directory: the Secret made last holds no userdata,
	// so no machine is made and the test needs no root.
	must(t, hostmachine.Setup(mgr, machine.Provider{Host: machine.Host{Dir: filepath.Join(t.TempDir(), "none")}}, "", 0))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		must(t, <-done)
	})

	hm := f.hostMachine(t, ns, "w1")
	m := f.machine(t, hm, "")
	// Woken by its own owner reference.
	awaitReady(t, f, hm, 20*time.Second, hostmachine.WaitingForBootstrapDataReason, "spec.bootstrap.dataSecretName")

	start := time.Now()
	f.setDataSecret(t, m, "w1-data")
	awaitReady(t, f, hm, wakeBound, hostmachine.WaitingForBootstrapDataReason, "Secret "+ns+"/w1-data")
	t.Logf("the Machine naming its Secret woke the HostMachine in %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	must(t, f.c.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w1-data", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "dev"}},
		Type:       hostmachine.DataSecretType,
		Data:       map[string][]byte{"value": {}},
	}))
	awaitReady(t, f, hm, wakeBound, hostmachine.InvalidBootstrapDataReason, "no userdata")
	t.Logf("its Secret woke the HostMachine in %s", time.Since(start).Round(time.Millisecond))
}

// awaitReady waits up to timeout for hm's Ready to have that reason and a
// message containing msg.
func awaitReady(t *testing.T, f *fixture, hm *hypershiftv1alpha1.HostMachine, timeout time.Duration, reason hypershiftv1alpha1.ConditionReason, msg string) {
	t.Helper()
	var last *metav1.Condition
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		got := &hypershiftv1alpha1.HostMachine{}
		if err := f.c.Get(ctx, client.ObjectKeyFromObject(hm), got); err != nil {
			return false, err
		}
		last = readyCondition(got.Status.Conditions)
		return last != nil && last.Reason == reason.String() && strings.Contains(last.Message, msg), nil
	})
	if err != nil {
		t.Fatalf("HostMachine %s: Ready %+v after %s, want %s with %q: %v", hm.Name, last, timeout, reason, msg, err)
	}
}

// The machine name is the HostMachine's when it is a machine name, else a
// valid one derived from namespace and name, the same on every call and
// different for another namespace.
func TestMachineName(t *testing.T) {
	hm := func(ns, name string) *hypershiftv1alpha1.HostMachine {
		return &hypershiftv1alpha1.HostMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	if got := hostmachine.MachineName(hm("a", "workers-7d9f-x2")); got != "workers-7d9f-x2" {
		t.Errorf("a valid name became %q", got)
	}
	long := "workers-of-a-rather-long-machine-deployment-7d9f8c-x2kq4"
	for _, name := range []string{long, "with.dots.in.it", "-", strings.Repeat("x", 253)} {
		a, b := hostmachine.MachineName(hm("a", name)), hostmachine.MachineName(hm("b", name))
		if err := machine.ValidateName(a); err != nil {
			t.Errorf("%q: %v", name, err)
		}
		if a != hostmachine.MachineName(hm("a", name)) || a == b {
			t.Errorf("%q: %q in namespace a, %q in b: want stable and distinct", name, a, b)
		}
	}
}
