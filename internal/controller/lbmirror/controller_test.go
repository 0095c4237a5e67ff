package lbmirror

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/controller/hostmachine"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// fixture: two real API servers, the management cluster (the
// control-plane namespace clusters-lb with the cluster's HostMachines) and
// the hosted cluster (the guest Services in apps).
type fixture struct {
	c    client.Client
	kube kubernetes.Interface
	hc   *hypershiftv1alpha1.HostedCluster
	r    *Reconciler
}

const (
	cpNamespace    = "clusters-lb"
	guestNamespace = "apps"
)

func setUp(t *testing.T) *fixture {
	t.Helper()
	mgmt, guest := testenv.Start(t), testenv.Start(t)
	c := mgmt.FastClient(t)
	kube, err := kubernetes.NewForConfig(guest.FastConfig())
	must(t, err)
	ctx := t.Context()
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "lb", hypershiftv1alpha1.HostPlatform, version.KubernetesVersion)
	for _, ns := range []string{"clusters", cpNamespace} {
		must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	_, err = kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guestNamespace}}, metav1.CreateOptions{})
	must(t, err)
	must(t, c.Create(ctx, hc))
	f := &fixture{c: c, kube: kube, hc: hc, r: &Reconciler{Client: c, APIReader: c, Limits: DefaultLimits}}
	// Two ready machines (the second dual-stack), one whose userdata
	// still runs, one being replaced: only the first two are endpoints.
	f.hostMachine(t, "m1", hostmachine.UserdataSucceededReason, "10.0.0.1")
	f.hostMachine(t, "m2", hostmachine.UserdataSucceededReason, "10.0.0.2", "fd00::2")
	f.hostMachine(t, "m3", hostmachine.UserdataRunningReason, "10.0.0.3")
	return f
}

func (f *fixture) hostMachine(t *testing.T, name string, reason hypershiftv1alpha1.ConditionReason, ips ...string) {
	t.Helper()
	hm := &hypershiftv1alpha1.HostMachine{ObjectMeta: metav1.ObjectMeta{Namespace: cpNamespace, Name: name}}
	must(t, f.c.Create(t.Context(), hm))
	hm.Status.Addresses = []hypershiftv1alpha1.MachineAddress{{Type: "Hostname", Address: name}}
	for _, ip := range ips {
		hm.Status.Addresses = append(hm.Status.Addresses, hypershiftv1alpha1.MachineAddress{Type: "InternalIP", Address: ip})
	}
	hm.Status.Conditions = []metav1.Condition{{
		Type: string(hostmachine.ReadyCondition), Status: metav1.ConditionTrue, Reason: string(reason), LastTransitionTime: metav1.Now(),
	}}
	must(t, f.c.Status().Update(t.Context(), hm))
}

// guest makes a guest Service of type LoadBalancer with one port.
func (f *fixture) guest(t *testing.T, name string, local bool) *corev1.Service {
	t.Helper()
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: guestNamespace, Name: name},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
		},
	}
	if local {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
	s, err := f.kube.CoreV1().Services(guestNamespace).Create(t.Context(), s, metav1.CreateOptions{})
	must(t, err)
	return s
}

func (f *fixture) pass(t *testing.T) {
	t.Helper()
	if err := f.r.Pass(t.Context(), f.hc, f.kube); err != nil {
		t.Fatalf("pass: %v", err)
	}
}

func (f *fixture) mirrorOf(t *testing.T, g *corev1.Service) *corev1.Service {
	t.Helper()
	return f.mirrorIn(t, cpNamespace, g)
}

// mirrorIn is g's mirror in namespace ns, nil when there is none.
func (f *fixture) mirrorIn(t *testing.T, ns string, g *corev1.Service) *corev1.Service {
	t.Helper()
	m := &corev1.Service{}
	err := f.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: mirrorName(string(g.UID))}, m)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return m
}

// endpoints lists the mirror's slices as "FAMILY ADDRESS:PORT" sorted.
func (f *fixture) endpoints(t *testing.T, m *corev1.Service) []string {
	t.Helper()
	list := &discoveryv1.EndpointSliceList{}
	must(t, f.c.List(t.Context(), list, client.InNamespace(m.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: m.Name}))
	var out []string
	for _, es := range list.Items {
		for _, e := range es.Endpoints {
			for _, p := range es.Ports {
				out = append(out, string(es.AddressType)+" "+e.Addresses[0]+":"+itoa(*p.Port))
			}
		}
	}
	slices.Sort(out)
	return out
}

// versions are the resource versions of guest g, its mirror and the
// mirror's slices.
func (f *fixture) versions(t *testing.T, g *corev1.Service) string {
	t.Helper()
	m := f.mirrorOf(t, g)
	list := &discoveryv1.EndpointSliceList{}
	must(t, f.c.List(t.Context(), list, client.InNamespace(cpNamespace), client.MatchingLabels{discoveryv1.LabelServiceName: m.Name}))
	out := f.get(t, g.Name).ResourceVersion + " " + m.ResourceVersion
	for _, es := range list.Items {
		out += " " + es.ResourceVersion
	}
	return out
}

func (f *fixture) get(t *testing.T, name string) *corev1.Service {
	t.Helper()
	s, err := f.kube.CoreV1().Services(guestNamespace).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return s
}

// TestLoadBalancerMirror runs passes against a real API server: a guest
// LoadBalancer Service gets a selector-less mirror whose endpoints are
// the ready machines at its node port, per address family, and the
// mirror's address; a Local Service only the machines that serve it; a
// Service of the mirror's name made by someone else, and a slice of the
// mirror's service name that is not the controller's, are left alone; a
// pass cut short by its byte or Service bound deletes no mirror, a
// complete one deletes the mirror of a Service gone; a deleted or retyped
// Service loses its mirror and then its finalizer; a write on a stale
// resource version is refused.
func TestLoadBalancerMirror(t *testing.T) {
	f := setUp(t)
	ctx := t.Context()

	web := f.guest(t, "web", false)
	nodePort := web.Spec.Ports[0].NodePort
	f.pass(t)
	m := f.mirrorOf(t, web)
	if m == nil {
		t.Fatal("no mirror of apps/web")
	}
	if m.Spec.Type != corev1.ServiceTypeLoadBalancer || len(m.Spec.Selector) != 0 || len(m.Spec.Ports) != 1 ||
		m.Spec.Ports[0].Port != 80 || m.Spec.Ports[0].TargetPort.IntVal != nodePort {
		t.Errorf("mirror spec %+v: want a LoadBalancer without selector, port 80 to the guest node port %d", m.Spec, nodePort)
	}
	if m.Labels[hostedref.OwnerUIDLabel] != string(f.hc.UID) || m.Annotations[GuestServiceAnnotation] != "apps/web" {
		t.Errorf("mirror labels %v annotations %v", m.Labels, m.Annotations)
	}
	want := []string{"IPv4 10.0.0.1:" + itoa(nodePort), "IPv4 10.0.0.2:" + itoa(nodePort), "IPv6 fd00::2:" + itoa(nodePort)}
	if got := f.endpoints(t, m); !slices.Equal(got, want) {
		t.Errorf("mirror endpoints %v, want %v (the ready machines, both families)", got, want)
	}
	if g := f.get(t, "web"); !slices.Contains(g.Finalizers, CleanupFinalizer) {
		t.Errorf("guest finalizers %v, want %s", g.Finalizers, CleanupFinalizer)
	}

	t.Run("the management cluster's address reaches the guest status", func(t *testing.T) {
		m.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10", Ports: []corev1.PortStatus{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
		must(t, f.c.Status().Update(ctx, m))
		f.pass(t)
		if in := f.get(t, "web").Status.LoadBalancer.Ingress; len(in) != 1 || in[0].IP != "192.0.2.10" {
			t.Errorf("guest ingress %+v, want 192.0.2.10", in)
		}
	})

	t.Run("a pass over what is in line writes nothing", func(t *testing.T) {
		before := f.versions(t, web)
		f.pass(t)
		if after := f.versions(t, web); after != before {
			t.Errorf("resource versions of the guest, the mirror and its slices %s, were %s: a pass with nothing to do wrote", after, before)
		}
	})

	t.Run("a Local Service: only the machines with a ready endpoint", func(t *testing.T) {
		local := f.guest(t, "local", true)
		_, err := f.kube.DiscoveryV1().EndpointSlices(guestNamespace).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.244.2.5"}, NodeName: ptr.To("m2"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
				{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("m1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
			},
		}, metav1.CreateOptions{})
		must(t, err)
		f.pass(t)
		np := itoa(local.Spec.Ports[0].NodePort)
		if got, want := f.endpoints(t, f.mirrorOf(t, local)), []string{"IPv4 10.0.0.2:" + np, "IPv6 fd00::2:" + np}; !slices.Equal(got, want) {
			t.Errorf("endpoints %v, want %v (m2 only)", got, want)
		}
	})

	t.Run("what is not the controller's is left alone", func(t *testing.T) {
		taken := f.guest(t, "taken", false)
		foreign := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: cpNamespace, Name: mirrorName(string(taken.UID)), Labels: map[string]string{"app": "mine"}},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}, Selector: map[string]string{"app": "mine"}},
		}
		must(t, f.c.Create(ctx, foreign))
		stray := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: cpNamespace, Name: "stray", Labels: map[string]string{discoveryv1.LabelServiceName: m.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
		}
		must(t, f.c.Create(ctx, stray))
		f.pass(t)
		got := &corev1.Service{}
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(foreign), got))
		if got.Spec.Ports[0].Port != 443 || got.Spec.Selector["app"] != "mine" || got.Labels[hostedref.OwnerUIDLabel] != "" {
			t.Errorf("the foreign Service was changed: %+v %v", got.Spec, got.Labels)
		}
		if in := f.get(t, "taken").Status.LoadBalancer.Ingress; len(in) != 0 {
			t.Errorf("a guest whose mirror's name is taken got an address %+v", in)
		}
		must(t, f.c.Get(ctx, client.ObjectKeyFromObject(stray), &discoveryv1.EndpointSlice{}))
		must(t, f.c.Delete(ctx, stray))
		must(t, f.c.Delete(ctx, foreign))
	})

	t.Run("a pass cut short deletes no mirror; a complete one does", func(t *testing.T) {
		gone := f.guest(t, "gone", false)
		f.pass(t)
		if f.mirrorOf(t, gone) == nil {
			t.Fatal("no mirror of apps/gone")
		}
		// Deleted with its finalizer taken off by hand: only a complete
		// pass can tell that it is gone.
		_, err := f.kube.CoreV1().Services(guestNamespace).Patch(ctx, "gone", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		must(t, err)
		must(t, f.kube.CoreV1().Services(guestNamespace).Delete(ctx, "gone", metav1.DeleteOptions{}))
		for _, l := range []Limits{
			{PageSize: 2, MaxBytes: 1 << 10, MaxServices: 100}, // past its bytes
			{PageSize: 100, MaxBytes: 8 << 20, MaxServices: 2}, // more LoadBalancers than mirrored
		} {
			r := *f.r
			r.Limits = l
			if err := r.Pass(ctx, f.hc, f.kube); !errors.Is(err, guestpass.ErrTruncated) {
				t.Errorf("pass with %+v: %v, want it truncated", l, err)
			}
			if f.mirrorOf(t, gone) == nil {
				t.Fatalf("a pass with %+v deleted the mirror of a Service it did not read", l)
			}
		}
		f.pass(t)
		if f.mirrorOf(t, gone) != nil {
			t.Error("a complete pass kept the mirror of a Service that is gone")
		}
	})

	t.Run("a deleted Service loses its mirror, then its finalizer", func(t *testing.T) {
		must(t, f.kube.CoreV1().Services(guestNamespace).Delete(ctx, "web", metav1.DeleteOptions{}))
		if f.get(t, "web") == nil {
			t.Fatal("apps/web went at once: its finalizer was not set")
		}
		f.pass(t)
		if f.mirrorOf(t, web) != nil {
			t.Error("the mirror of a deleted Service is kept")
		}
		if f.get(t, "web") != nil {
			t.Error("the deleted Service is kept: its finalizer was not removed")
		}
	})

	t.Run("a Service no longer a LoadBalancer loses its mirror, address and finalizer", func(t *testing.T) {
		flip := f.guest(t, "flip", false)
		f.pass(t)
		fm := f.mirrorOf(t, flip)
		fm.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.11"}}
		must(t, f.c.Status().Update(ctx, fm))
		f.pass(t)
		_, err := f.kube.CoreV1().Services(guestNamespace).Patch(ctx, "flip", types.MergePatchType, []byte(`{"spec":{"type":"ClusterIP"}}`), metav1.PatchOptions{})
		must(t, err)
		f.pass(t)
		g := f.get(t, "flip")
		if f.mirrorOf(t, flip) != nil || slices.Contains(g.Finalizers, CleanupFinalizer) || len(g.Status.LoadBalancer.Ingress) != 0 {
			t.Errorf("mirror kept %v, finalizers %v, ingress %+v: want none of them", f.mirrorOf(t, flip) != nil, g.Finalizers, g.Status.LoadBalancer.Ingress)
		}
	})

	t.Run("writes to the guest are conditional on what the pass read", func(t *testing.T) {
		s := f.guest(t, "stale", false)
		g := guestService{Namespace: s.Namespace, Name: s.Name, ResourceVersion: s.ResourceVersion}
		_, err := f.kube.CoreV1().Services(guestNamespace).Patch(ctx, "stale", types.MergePatchType, []byte(`{"metadata":{"labels":{"moved":"on"}}}`), metav1.PatchOptions{})
		must(t, err)
		if _, err := addGuestFinalizer(ctx, f.kube, g); !apierrors.IsConflict(err) {
			t.Errorf("finalizer on a stale resource version: %v, want a conflict", err)
		}
		if err := copyIngress(ctx, f.kube, g, []corev1.LoadBalancerIngress{{IP: "192.0.2.12"}}); !apierrors.IsConflict(err) {
			t.Errorf("status on a stale resource version: %v, want a conflict", err)
		}
		// The finalizer removed is the one read where it was read: a list
		// changed since is refused, not cut.
		g.Finalizers = []string{"example.com/other", CleanupFinalizer}
		if err := removeGuestFinalizer(ctx, f.kube, g); err == nil || !strings.Contains(err.Error(), "remove finalizer") {
			t.Errorf("removing a finalizer the Service does not have where read: %v, want refused", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
