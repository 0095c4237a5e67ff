package lbmirror

import (
	"maps"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
)

const (
	// CleanupFinalizer is the finalizer a guest LoadBalancer Service gets
	// while it has a mirror: Kubernetes' own, as a cloud provider's
	// service controller sets it, so that the Service is not gone before
	// its load balancer is.
	CleanupFinalizer = "service.kubernetes.io/load-balancer-cleanup"
	// GuestUIDLabel on a mirror Service and its EndpointSlices is the UID
	// of the guest Service it mirrors.
	GuestUIDLabel = "hypershift.dev/guest-service-uid"
	// GuestServiceAnnotation on a mirror names the guest Service,
	// NAMESPACE/NAME.
	GuestServiceAnnotation = "hypershift.dev/guest-service"
	// ManagedBy is the EndpointSlices' endpointslice.kubernetes.io/managed-by:
	// Kubernetes' EndpointSlice controllers leave slices of another
	// manager alone.
	ManagedBy = "lb-mirror.hypershift.dev"
)

// machine is one endpoint a mirror sends to: a ready machine of the
// cluster, at the address the HostMachine controller recorded.
type machine struct {
	Node string // the guest Node's name (the machine's hostname)
	IPs  []net.IP
}

// mirrorName is the mirror Service's name: the guest Service's UID, so
// that a Service made again under an old name gets a mirror of its own.
func mirrorName(guestUID string) string {
	return "lb-" + strings.ReplaceAll(guestUID, "-", "")
}

// mirrorLabels are the labels of a mirror and its slices.
func mirrorLabels(hc *hypershiftv1alpha1.HostedCluster, guestUID string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/managed-by":  "hypershift",
		hostedref.OwnerUIDLabel:         string(hc.UID),
		hostedref.ClusterNamespaceLabel: hc.Namespace,
		hostedref.ClusterNameLabel:      hc.Name,
		GuestUIDLabel:                   guestUID,
	}
}

// mirroredPorts are the guest's ports that have a node port: the mirror's
// port is the guest's, its target the guest's node port on each machine.
func mirroredPorts(g guestService) []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, p := range g.Ports {
		if p.NodePort == 0 {
			continue
		}
		out = append(out, corev1.ServicePort{
			Name: p.Name, Protocol: p.Protocol, Port: p.Port,
			TargetPort: intstr.FromInt32(p.NodePort),
		})
	}
	return out
}

// mirrorService renders the mirror of g in namespace: a LoadBalancer
// Service without a selector (its EndpointSlices are written by this
// controller from the machines it verified, so no pod of the namespace
// can be taken for a machine by its labels). Its externalTrafficPolicy is
// Cluster whatever the guest's: its endpoints name no node of the
// management cluster, which a Local policy needs; a guest Local policy
// narrows the endpoints to the machines that serve the Service instead.
func mirrorService(hc *hypershiftv1alpha1.HostedCluster, namespace string, g guestService) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: mirrorName(g.UID), Namespace: namespace,
			Labels:      mirrorLabels(hc, g.UID),
			Annotations: map[string]string{GuestServiceAnnotation: g.Namespace + "/" + g.Name},
		},
		Spec: corev1.ServiceSpec{
			Type:                     corev1.ServiceTypeLoadBalancer,
			Ports:                    mirroredPorts(g),
			ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyCluster,
			LoadBalancerSourceRanges: g.SourceRanges,
			IPFamilyPolicy:           ptr.To(corev1.IPFamilyPolicyPreferDualStack),
		},
	}
}

// endpointSlices renders the mirror's slices: one per address family the
// machines have, each listing every machine's address of that family as
// ready, with the mirror's ports by name at the guest's node ports.
func endpointSlices(mirror *corev1.Service, machines []machine) []*discoveryv1.EndpointSlice {
	ports := make([]discoveryv1.EndpointPort, 0, len(mirror.Spec.Ports))
	for _, p := range mirror.Spec.Ports {
		ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Protocol: ptr.To(p.Protocol), Port: ptr.To(p.TargetPort.IntVal)})
	}
	var out []*discoveryv1.EndpointSlice
	for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		var eps []discoveryv1.Endpoint
		for _, m := range machines {
			for _, ip := range m.IPs {
				if (ip.To4() != nil) != (family == discoveryv1.AddressTypeIPv4) {
					continue
				}
				eps = append(eps, discoveryv1.Endpoint{
					Addresses:  []string{ip.String()},
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
					Hostname:   ptr.To(m.Node),
				})
			}
		}
		if len(eps) == 0 {
			continue
		}
		slices.SortFunc(eps, func(a, b discoveryv1.Endpoint) int { return strings.Compare(a.Addresses[0], b.Addresses[0]) })
		labels := maps.Clone(mirror.Labels)
		labels[discoveryv1.LabelServiceName] = mirror.Name
		labels[discoveryv1.LabelManagedBy] = ManagedBy
		out = append(out, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: mirror.Name + "-" + strings.ToLower(string(family)), Namespace: mirror.Namespace,
				Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: "v1", Kind: "Service", Name: mirror.Name, UID: mirror.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			AddressType: family,
			Endpoints:   eps,
			Ports:       ports,
		})
	}
	return out
}
