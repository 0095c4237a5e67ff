package hostmachine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/capiref"
)

// What wakes a HostMachine besides its own changes, as Cluster API's
// infrastructure providers (CAPD, CAPK) are woken: its Machine, and the
// Machine's bootstrap data Secret — the two things it waits for before its
// machine is made. waitRecheck stays as a safety net.

// kindHostMachine is the kind a Machine's spec.infrastructureRef names.
const kindHostMachine = "HostMachine"

// machineWatch starts the watch on Cluster API's Machines once a Machine
// was read: the operator starts before Cluster API's CRDs exist (the first
// pool of platform Host installs them, the kube runtime has none), and a
// watch of a kind that is not served retries, and logs, forever.
type machineWatch struct {
	controller controller.Controller
	cache      cache.Cache

	mu      sync.Mutex
	started atomic.Bool
}

// ensure starts the watch, once. A nil watch (a Reconciler not set up
// with a manager) does nothing.
func (w *machineWatch) ensure() error {
	if w == nil || w.started.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started.Load() {
		return nil
	}
	m := &unstructured.Unstructured{}
	m.SetGroupVersionKind(capiref.MachineGVK)
	src := source.Kind[client.Object](w.cache, m, handler.EnqueueRequestsFromMapFunc(hostMachineOfMachine), machineChanged)
	if err := w.controller.Watch(src); err != nil {
		return fmt.Errorf("watch Cluster API Machines: %w", err)
	}
	w.started.Store(true)
	return nil
}

// machineChanged: a Machine made, or its spec changed (Cluster API sets
// spec.bootstrap.dataSecretName once the bootstrap provider made the
// Secret); its status changes often and tells a HostMachine nothing.
var machineChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return true },
	UpdateFunc:  func(e event.UpdateEvent) bool { return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// hostMachineOfMachine is the HostMachine a Machine's
// spec.infrastructureRef names, in the Machine's namespace.
func hostMachineOfMachine(_ context.Context, obj client.Object) []reconcile.Request {
	m, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if req, ok := hostMachineRequest(m); ok {
		return []reconcile.Request{req}
	}
	return nil
}

func hostMachineRequest(m *unstructured.Unstructured) (reconcile.Request, bool) {
	group, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "apiGroup")
	kind, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "kind")
	name, _, _ := unstructured.NestedString(m.Object, "spec", "infrastructureRef", "name")
	if group != hypershiftv1alpha1.GroupVersion.Group || kind != kindHostMachine || name == "" {
		return reconcile.Request{}, false
	}
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: name}}, true
}

// bootstrapDataSecret: a Secret of a Cluster API cluster (its
// cluster-name label, which the JoinConfig controller sets on the data
// Secrets it writes), made or changed. The operator's Secret informer is
// shared with the HostedControlPlane and JoinConfig controllers, which
// already hold every Secret: this watch adds no cache, and the label keeps
// the management cluster's other Secrets from being mapped at all.
var bootstrapDataSecret = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return hasClusterName(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return hasClusterName(e.ObjectNew) && e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func hasClusterName(obj client.Object) bool {
	return obj.GetLabels()[capiref.ClusterNameLabel] != ""
}

// hostMachinesOfSecret are the HostMachines whose Machine, in the Secret's
// namespace, names it as its bootstrap data: the Machines are listed from
// the watch's cache. Before the Machine watch started no HostMachine has a
// Machine to wait on, so there are none.
func (w *machineWatch) hostMachinesOfSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if _, ok := obj.(*corev1.Secret); !ok || w == nil || !w.started.Load() {
		return nil
	}
	machines := &unstructured.UnstructuredList{}
	machines.SetGroupVersionKind(capiref.MachineGVK.GroupVersion().WithKind(capiref.MachineGVK.Kind + "List"))
	if err := w.cache.List(ctx, machines, client.InNamespace(obj.GetNamespace())); err != nil {
		// The resync finds the HostMachine instead.
		ctrl.LoggerFrom(ctx).Error(err, "list the Machines naming a bootstrap data Secret", "secret", client.ObjectKeyFromObject(obj))
		return nil
	}
	var reqs []reconcile.Request
	for i := range machines.Items {
		m := &machines.Items[i]
		if name, _, _ := unstructured.NestedString(m.Object, "spec", "bootstrap", "dataSecretName"); name != obj.GetName() {
			continue
		}
		if req, ok := hostMachineRequest(m); ok {
			reqs = append(reqs, req)
		}
	}
	return reqs
}
