// Package lbmirror gives the guest LoadBalancer Services of hosted
// clusters whose machines are pods of the management cluster (platform
// Host on the kube runtime) a load balancer of the management cluster:
// cloud-provider-kubevirt's design. Each guest Service of type
// LoadBalancer gets a mirror, a LoadBalancer Service in the cluster's
// control-plane namespace whose endpoints are the cluster's ready
// machines at the guest's node ports, and the guest Service's
// status.loadBalancer carries the address the management cluster's load
// balancer gives the mirror.
//
// What the hosted cluster's admin writes — its Services and
// EndpointSlices — is input: it is read in bounded pages under a byte
// budget per pass, a pass cut short deletes no mirror, and the mirrors'
// endpoints come from the HostMachines the operator itself recorded,
// never from a label selector a pod could match.
package lbmirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/controller/hostmachine"
	"hypershift.dev/internal/hostedref"
)

// DefaultInterval is how often a cluster's Services are read again: the
// controller does not watch the hosted cluster, whose objects it reads
// only in bounded passes.
const DefaultInterval = 10 * time.Second

// Event reasons, on the HostedCluster.
const (
	// ScanTruncatedReason: a pass stopped at its limits; no mirror was
	// deleted in it.
	ScanTruncatedReason = "LoadBalancerScanTruncated"
	// NameTakenReason: a Service of a mirror's name is not this cluster's
	// mirror of that guest Service; it is left alone.
	NameTakenReason = "LoadBalancerNameTaken"
	// MirrorFailedReason: a mirror could not be made or kept.
	MirrorFailedReason = "LoadBalancerMirrorFailed"
)

// Reconciler mirrors the guest LoadBalancer Services of HostedClusters of
// platform Host (machines that are pods) and KubeVirt.
type Reconciler struct {
	// Client reads HostedClusters, HostedControlPlanes and HostMachines
	// (cached) and writes mirrors.
	Client client.Client
	// APIReader reads mirrors and their EndpointSlices from the API
	// server: they are written on conditions of what was read.
	APIReader client.Reader
	Guests    guestpass.Guests
	// Limits bound each pass; zero: DefaultLimits.
	Limits Limits
	// Interval between passes; zero: DefaultInterval.
	Interval time.Duration
	// Recorder may be nil.
	Recorder events.EventRecorder
	// HostMachinePods says that the machines of platform Host are pods of
	// the management cluster (the kube runtime): only then do its
	// clusters get mirrors. KubeVirt clusters get them on every runtime.
	HostMachinePods bool
	// GiveUpAfter is how long a deleted cluster's mirrors in an external
	// infrastructure cluster that answers with errors are tried; zero:
	// DefaultGiveUpAfter.
	GiveUpAfter time.Duration
}

// SetupWithManager registers the controller: a pass for each
// HostedCluster it applies to every Interval.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Limits == (Limits{}) {
		r.Limits = DefaultLimits
	}
	if r.Interval == 0 {
		r.Interval = DefaultInterval
	}
	return (&guestpass.Loop{
		Name: "lbmirror", Client: r.Client, Guests: r.Guests, Interval: r.Interval,
		Applies:  r.applies,
		Pass:     r.Pass,
		Finalize: r.Finalize,
	}).SetupWithManager(mgr)
}

// applies: platform Host where its machines are pods, and KubeVirt.
func (r *Reconciler) applies(hc *hypershiftv1alpha1.HostedCluster) bool {
	switch hc.Spec.Platform.Type {
	case hypershiftv1alpha1.HostPlatform:
		return r.HostMachinePods
	case hypershiftv1alpha1.KubeVirtPlatform:
		return true
	}
	return false
}

// Pass reads the hosted cluster's LoadBalancer Services and brings their
// mirrors, the mirrors' endpoints and the guests' statuses in line. Every
// write is conditional on the resource version (or, for a delete, the
// UID) read in the pass.
func (r *Reconciler) Pass(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kube kubernetes.Interface) error {
	ctx, in, done, err := r.connect(ctx, hc)
	if err != nil {
		return err
	}
	defer done()
	machines, err := r.machinesOf(ctx, hc, in)
	if err != nil {
		return err
	}
	b := &guestpass.Budget{Left: r.Limits.MaxBytes}
	guests, scanErr := scanServices(ctx, kube.CoreV1().RESTClient(), r.Limits, b)
	truncated := errors.Is(scanErr, guestpass.ErrTruncated)
	if scanErr != nil && !truncated {
		return scanErr
	}
	byGuest, err := r.mirrors(ctx, hc, in)
	switch {
	case errors.Is(err, guestpass.ErrTruncated):
		scanErr, truncated = errors.Join(scanErr, err), true
	case err != nil:
		return err
	}
	if in.remote && slices.ContainsFunc(guests, func(g guestService) bool { return g.LoadBalancer && !g.Deleting }) {
		// Mirrors outside the control-plane namespace do not go with it:
		// the cluster's deletion waits for them (Finalize).
		if err := r.addClusterFinalizer(ctx, hc); err != nil {
			return err
		}
	}
	var errs []error
	keep := map[string]bool{}
	for _, g := range guests {
		if g.LoadBalancer && !g.Deleting {
			keep[g.UID] = true
			if err := r.ensure(ctx, hc, in, kube, g, byGuest[g.UID], machines, b); err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", g.Namespace, g.Name, err))
			}
			continue
		}
		if err := r.release(ctx, in, kube, g, byGuest[g.UID]); err != nil {
			errs = append(errs, fmt.Errorf("%s/%s: %w", g.Namespace, g.Name, err))
		}
		keep[g.UID] = true // its mirror was deleted above
	}
	if truncated {
		r.event(hc, corev1.EventTypeWarning, ScanTruncatedReason, "Scan",
			"the hosted cluster's Services were read only in part (%v): no load-balancer mirror was deleted in this pass", scanErr)
		return errors.Join(append(errs, scanErr)...)
	}
	// A complete pass: the mirrors of Services that are no longer
	// LoadBalancers, or gone without the finalizer (removed by hand), go.
	for uid, m := range byGuest {
		if keep[uid] {
			continue
		}
		if err := guestpass.DeleteOwned(ctx, in.client, m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// connect opens the cluster's infrastructure, reporting on the
// HostedCluster what is wrong with its Secret, in the operator's words
// (nothing an infrastructure cluster answered is repeated there). A pass
// on an external infrastructure cluster has remoteTimeout; done ends it.
func (r *Reconciler) connect(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (context.Context, *infra, func(), error) {
	in, err := r.infraOf(ctx, hc, false)
	if err != nil {
		r.event(hc, corev1.EventTypeWarning, MirrorFailedReason, "Connect", "no load balancer is mirrored: %v", err)
		return ctx, nil, nil, err
	}
	if !in.remote {
		return ctx, in, in.close, nil
	}
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	return ctx, in, func() { cancel(); in.close() }, nil
}

// mirrors are the cluster's mirrors in its infrastructure namespace, by
// guest Service UID: as many as there may be LoadBalancers, and as many
// again being replaced. More (another writer's, in an infrastructure
// namespace) are ErrTruncated with those read: a pass that deletes none.
func (r *Reconciler) mirrors(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, in *infra) (map[string]*corev1.Service, error) {
	list := &corev1.ServiceList{}
	if err := in.reader.List(ctx, list, client.InNamespace(in.namespace), client.Limit(int64(2*r.Limits.MaxServices)),
		client.MatchingLabels{hostedref.OwnerUIDLabel: string(hc.UID)}, client.HasLabels{GuestUIDLabel}); err != nil {
		return nil, fmt.Errorf("mirrors in %s: %w", in.namespace, err)
	}
	byGuest := map[string]*corev1.Service{}
	for i := range list.Items {
		m := &list.Items[i]
		byGuest[m.Labels[GuestUIDLabel]] = m
	}
	if list.Continue != "" {
		return byGuest, fmt.Errorf("more than %d mirrors in %s: %w", 2*r.Limits.MaxServices, in.namespace, guestpass.ErrTruncated)
	}
	return byGuest, nil
}

// machinesOf are the cluster's ready machines, of its platform.
func (r *Reconciler) machinesOf(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, in *infra) ([]machine, error) {
	if hc.Spec.Platform.Type == hypershiftv1alpha1.KubeVirtPlatform {
		return r.kubevirtMachines(ctx, hc, in)
	}
	return r.machines(ctx, in.namespace)
}

// machines are the cluster's ready machines: HostMachines of the
// control-plane namespace, not being deleted, whose userdata succeeded,
// at the addresses the HostMachine controller recorded.
func (r *Reconciler) machines(ctx context.Context, ns string) ([]machine, error) {
	list := &hypershiftv1alpha1.HostMachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("HostMachines in %s: %w", ns, err)
	}
	var out []machine
	for _, hm := range list.Items {
		ready := meta.FindStatusCondition(hm.Status.Conditions, string(hostmachine.ReadyCondition))
		if hm.DeletionTimestamp != nil || ready == nil || ready.Status != metav1.ConditionTrue ||
			ready.Reason != string(hostmachine.UserdataSucceededReason) {
			continue
		}
		m := machine{}
		for _, a := range hm.Status.Addresses {
			switch a.Type {
			case "Hostname":
				m.Node = a.Address
			case "InternalIP":
				if ip := net.ParseIP(a.Address); ip != nil {
					m.IPs = append(m.IPs, ip)
				}
			}
		}
		if m.Node != "" && len(m.IPs) > 0 {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b machine) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}

// ensure keeps g's finalizer, its mirror, the mirror's endpoints and g's
// status.
func (r *Reconciler) ensure(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, in *infra, kube kubernetes.Interface,
	g guestService, mirror *corev1.Service, machines []machine, b *guestpass.Budget,
) error {
	want := mirrorService(hc, in.namespace, g)
	if len(want.Spec.Ports) == 0 {
		return errors.New("no port has a node port (spec.allocateLoadBalancerNodePorts false): nothing to mirror to")
	}
	if !g.finalized() {
		rv, err := addGuestFinalizer(ctx, kube, g)
		if err != nil {
			return err
		}
		g.ResourceVersion = rv // the status write below is conditional on it
	}
	mirror, err := r.ensureMirror(ctx, hc, in, want, mirror)
	if err != nil || mirror == nil {
		return err
	}
	if g.Local {
		nodes, err := readyNodes(ctx, kube.DiscoveryV1().RESTClient(), g, r.Limits, b)
		if err != nil {
			return fmt.Errorf("its endpoints (the mirror's kept as they are): %w", err)
		}
		machines = slices.DeleteFunc(slices.Clone(machines), func(m machine) bool { return !nodes[m.Node] })
	}
	if err := r.ensureSlices(ctx, in, mirror, endpointSlices(mirror, machines)); err != nil {
		return err
	}
	return copyIngress(ctx, kube, g, mirror.Status.LoadBalancer.Ingress)
}

// ensureMirror creates the mirror, or updates this cluster's mirror of g
// when its spec differs. A Service of the name that is not that mirror is
// reported and left alone (nil, nil).
func (r *Reconciler) ensureMirror(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, in *infra, want, have *corev1.Service) (*corev1.Service, error) {
	if have == nil {
		err := in.client.Create(ctx, want)
		if err == nil {
			return want, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create mirror %s/%s: %w", want.Namespace, want.Name, err)
		}
		have = &corev1.Service{}
		if err := in.reader.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
			return nil, err
		}
	}
	if have.Labels[hostedref.OwnerUIDLabel] != string(hc.UID) || have.Labels[GuestUIDLabel] != want.Labels[GuestUIDLabel] || have.Name != want.Name {
		r.event(hc, corev1.EventTypeWarning, NameTakenReason, "Mirror",
			"Service %s/%s is not this cluster's load balancer of %s: left alone, the guest Service gets no address",
			have.Namespace, have.Name, want.Annotations[GuestServiceAnnotation])
		return nil, nil
	}
	// The ports the management cluster allocated (node ports) are kept.
	ports := slices.Clone(want.Spec.Ports)
	for i := range ports {
		for _, p := range have.Spec.Ports {
			if p.Name == ports[i].Name && p.Protocol == ports[i].Protocol {
				ports[i].NodePort = p.NodePort
			}
		}
	}
	if apiequality.Semantic.DeepEqual(have.Spec.Ports, ports) && have.Spec.ExternalTrafficPolicy == want.Spec.ExternalTrafficPolicy &&
		have.Spec.Type == want.Spec.Type && len(have.Spec.Selector) == 0 &&
		slices.Equal(have.Spec.LoadBalancerSourceRanges, want.Spec.LoadBalancerSourceRanges) {
		return have, nil
	}
	upd := have.DeepCopy()
	upd.Spec.Type, upd.Spec.Ports, upd.Spec.ExternalTrafficPolicy, upd.Spec.Selector = want.Spec.Type, ports, want.Spec.ExternalTrafficPolicy, nil
	upd.Spec.LoadBalancerSourceRanges = want.Spec.LoadBalancerSourceRanges
	upd.Spec.HealthCheckNodePort = 0
	if err := in.client.Update(ctx, upd); err != nil { // conditional: have's resourceVersion
		return nil, fmt.Errorf("update mirror %s/%s: %w", upd.Namespace, upd.Name, err)
	}
	return upd, nil
}

// maxSlices bounds the slices of one mirror read (it has one per family).
const maxSlices = 8

// ensureSlices makes the mirror's EndpointSlices what want says, creating,
// updating (conditionally) and deleting (by UID) only slices labelled as
// this mirror's.
func (r *Reconciler) ensureSlices(ctx context.Context, in *infra, mirror *corev1.Service, want []*discoveryv1.EndpointSlice) error {
	have := &discoveryv1.EndpointSliceList{}
	if err := in.reader.List(ctx, have, client.InNamespace(mirror.Namespace), client.Limit(maxSlices),
		client.MatchingLabels{
			discoveryv1.LabelServiceName: mirror.Name, discoveryv1.LabelManagedBy: ManagedBy,
			hostedref.OwnerUIDLabel: mirror.Labels[hostedref.OwnerUIDLabel],
		}); err != nil {
		return fmt.Errorf("EndpointSlices of %s: %w", mirror.Name, err)
	}
	byName := map[string]*discoveryv1.EndpointSlice{}
	for i := range have.Items {
		byName[have.Items[i].Name] = &have.Items[i]
	}
	var errs []error
	for _, w := range want {
		h := byName[w.Name]
		delete(byName, w.Name)
		switch {
		case h == nil:
			if err := in.client.Create(ctx, w); err != nil {
				errs = append(errs, fmt.Errorf("create EndpointSlice %s: %w", w.Name, err))
			}
		case !apiequality.Semantic.DeepEqual(h.Endpoints, w.Endpoints) || !apiequality.Semantic.DeepEqual(h.Ports, w.Ports):
			upd := h.DeepCopy()
			upd.Endpoints, upd.Ports = w.Endpoints, w.Ports
			if err := in.client.Update(ctx, upd); err != nil {
				errs = append(errs, fmt.Errorf("update EndpointSlice %s: %w", w.Name, err))
			}
		}
	}
	for _, h := range byName {
		if err := guestpass.DeleteOwned(ctx, in.client, h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// release deletes g's mirror and then takes the finalizer off g: g is
// being deleted, or no longer a LoadBalancer.
func (r *Reconciler) release(ctx context.Context, in *infra, kube kubernetes.Interface, g guestService, mirror *corev1.Service) error {
	if mirror != nil {
		if err := guestpass.DeleteOwned(ctx, in.client, mirror); err != nil {
			return err
		}
	}
	if !g.finalized() {
		return nil
	}
	if !g.Deleting {
		// No longer a LoadBalancer: its address goes too.
		if err := copyIngress(ctx, kube, g, nil); err != nil {
			return err
		}
	}
	return removeGuestFinalizer(ctx, kube, g)
}

// addGuestFinalizer adds the cleanup finalizer to g, conditional on the
// resource version the pass read, and returns the Service's new one.
func addGuestFinalizer(ctx context.Context, kube kubernetes.Interface, g guestService) (string, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": g.ResourceVersion, "finalizers": append(slices.Clone(g.Finalizers), CleanupFinalizer),
	}})
	if err != nil {
		return "", err
	}
	s, err := kube.CoreV1().Services(g.Namespace).Patch(ctx, g.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return "", fmt.Errorf("add finalizer: %w", err)
	}
	return s.ResourceVersion, nil
}

// removeGuestFinalizer takes the cleanup finalizer off g: a JSON patch
// that removes it where the pass read it, tested there first, so that
// no other finalizer is dropped whatever was written since.
func removeGuestFinalizer(ctx context.Context, kube kubernetes.Interface, g guestService) error {
	patch, err := guestpass.FinalizerRemoval(g.Finalizers, CleanupFinalizer)
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Services(g.Namespace).Patch(ctx, g.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// copyIngress writes ingress (its addresses, hostnames and IP modes) as
// g's status.loadBalancer, conditional on the resource version read,
// when it differs.
func copyIngress(ctx context.Context, kube kubernetes.Interface, g guestService, ingress []corev1.LoadBalancerIngress) error {
	want := make([]corev1.LoadBalancerIngress, 0, len(ingress))
	for _, in := range ingress {
		want = append(want, corev1.LoadBalancerIngress{IP: in.IP, Hostname: in.Hostname, IPMode: in.IPMode})
	}
	if sameIngress(want, g.Ingress) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": g.ResourceVersion},
		"status":   map[string]any{"loadBalancer": map[string]any{"ingress": want}},
	})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Services(g.Namespace).Patch(ctx, g.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}

// sameIngress compares addresses as the guest stores them: an address's
// IP mode defaults to VIP there, and ports are not copied.
func sameIngress(want, have []corev1.LoadBalancerIngress) bool {
	if len(want) != len(have) {
		return false
	}
	mode := func(in corev1.LoadBalancerIngress) corev1.LoadBalancerIPMode {
		if in.IPMode == nil && in.IP != "" {
			return corev1.LoadBalancerIPModeVIP
		}
		return ptr.Deref(in.IPMode, "")
	}
	for i := range want {
		if want[i].IP != have[i].IP || want[i].Hostname != have[i].Hostname || mode(want[i]) != mode(have[i]) {
			return false
		}
	}
	return true
}

func (r *Reconciler) event(hc *hypershiftv1alpha1.HostedCluster, typ, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(hc, nil, typ, reason, action, note, args...)
	}
}
