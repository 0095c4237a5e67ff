package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// PinnedNodePortsAnnotation on a control plane's namespace holds the node
// ports PinPorts fixed, by published name (JSON, {"endpoint":31234}): a
// restored cluster keeps the node port its saved kubeconfigs name. It is on
// the namespace because the pin is made before any object of the control
// plane exists, and goes with it.
const PinnedNodePortsAnnotation = "hypershift.dev/pinned-node-ports"

// pinTimeout bounds PinPorts, which has no context.
const pinTimeout = 30 * time.Second

// The API server's default --service-node-port-range: a port outside it
// (a host port of the process runtime, in a migration from it) would make
// every Apply of the Service fail. A cluster with a wider range gets a new
// node port for it too.
const (
	minNodePort = 30000
	maxNodePort = 32767
)

// PinPorts implements runtime.Runtime for published NodePorts: ports
// maps a published name (Publish.Name) to the node port it must get when
// its spec leaves the node port to the management cluster. It reports
// false when the control plane has published Services already, and an
// error naming the Service when a node port is taken.
func (r *Runtime) PinPorts(ref runtime.ControlPlaneRef, ports map[string]int) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pinTimeout)
	defer cancel()
	reader := r.apiReader()
	own := &corev1.ServiceList{}
	if err := reader.List(ctx, own, client.InNamespace(ref.Namespace),
		client.MatchingLabels{ManagedByLabel: ManagedBy, ControlPlaneLabel: ref.Name}); err != nil {
		return false, fmt.Errorf("list the Services of %s: %w", ref.Namespace, err)
	}
	for _, svc := range own.Items {
		if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			return false, nil
		}
	}
	all := &corev1.ServiceList{}
	if err := reader.List(ctx, all); err != nil {
		return false, fmt.Errorf("list Services for their node ports: %w", err)
	}
	// A pin not yet taken by a Service (its control plane has not applied
	// them) holds its port too.
	namespaces := &corev1.NamespaceList{}
	if err := reader.List(ctx, namespaces); err != nil {
		return false, fmt.Errorf("list namespaces for their pinned node ports: %w", err)
	}
	for name, port := range ports {
		if port < minNodePort || port > maxNodePort {
			return false, fmt.Errorf("port %d of %s is outside the node port range %d-%d (an archive of a plane that publishes on host ports)", port, name, minNodePort, maxNodePort)
		}
		for _, svc := range all.Items {
			for _, p := range svc.Spec.Ports {
				if int(p.NodePort) == port {
					return false, fmt.Errorf("node port %d of %s is used by Service %s/%s", port, name, svc.Namespace, svc.Name)
				}
			}
		}
		if holder := pinnedBy(namespaces.Items, ref.Namespace, port); holder != "" {
			return false, fmt.Errorf("node port %d of %s is pinned by namespace %s", port, name, holder)
		}
	}
	raw, err := json.Marshal(ports)
	if err != nil {
		return false, err
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: ref.Namespace}, ns); err != nil {
		return false, fmt.Errorf("namespace %s: %w", ref.Namespace, err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	metav1.SetMetaDataAnnotation(&ns.ObjectMeta, PinnedNodePortsAnnotation, string(raw))
	if err := r.client.Patch(ctx, ns, patch); err != nil {
		return false, fmt.Errorf("record the pinned node ports on namespace %s: %w", ref.Namespace, err)
	}
	return true, nil
}

// pinnedBy names the namespace other than own whose pin annotation holds
// port; "" when none does.
func pinnedBy(namespaces []corev1.Namespace, own string, port int) string {
	for _, ns := range namespaces {
		if ns.Name == own {
			continue
		}
		pins, err := pinsOf(&ns)
		if err != nil {
			continue
		}
		for _, p := range pins {
			if p == port {
				return ns.Name
			}
		}
	}
	return ""
}

// withPinnedNodePorts gives the NodePorts of specs that leave their node
// port to the management cluster the ports pinned on the control plane's
// namespace; specs are copied, never changed in place.
func (r *Runtime) withPinnedNodePorts(ctx context.Context, ref runtime.ControlPlaneRef, specs []runtime.Spec) ([]runtime.Spec, error) {
	ns := &corev1.Namespace{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: ref.Namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return specs, nil // nothing pinned; the objects' own apply says what is missing
		}
		return nil, fmt.Errorf("namespace %s: %w", ref.Namespace, err)
	}
	pins, err := pinsOf(ns)
	if err != nil {
		return nil, err
	}
	if pins == nil {
		return specs, nil
	}
	return pinNodePorts(specs, pins), nil
}

// pinsOf reads a namespace's PinnedNodePortsAnnotation; nil when it has
// none.
func pinsOf(ns *corev1.Namespace) (map[string]int, error) {
	raw, ok := ns.Annotations[PinnedNodePortsAnnotation]
	if !ok {
		return nil, nil
	}
	pins := map[string]int{}
	if err := json.Unmarshal([]byte(raw), &pins); err != nil {
		return nil, fmt.Errorf("namespace %s: annotation %s: %w", ns.Name, PinnedNodePortsAnnotation, err)
	}
	return pins, nil
}

// pinNodePorts is withPinnedNodePorts' pure part.
func pinNodePorts(specs []runtime.Spec, pins map[string]int) []runtime.Spec {
	out := make([]runtime.Spec, len(specs))
	for i, s := range specs {
		if len(s.Publish) > 0 {
			s.Publish = append([]runtime.Publish(nil), s.Publish...)
			for j, p := range s.Publish {
				if port, ok := pins[p.Name]; ok && p.Type == runtime.NodePort && p.NodePort == 0 {
					s.Publish[j].NodePort = port
				}
			}
		}
		out[i] = s
	}
	return out
}
