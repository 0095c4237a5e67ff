package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// publishedServiceName names the Service that publishes a port: its own
// Service, so the port alone gets a node port or a load balancer (the
// component's other ports, health and admin ones, stay inside).
func publishedServiceName(component, port string) string {
	return component + "-" + port + "-published"
}

// servicePortName names a port in the workload's Service: a sidecar's
// ports carry its component, so that names never clash across containers.
func (r renderer) servicePortName(s runtime.Spec, port string) string {
	if s.Component == r.w.component {
		return port
	}
	return s.Component + "-" + port
}

// servicePorts lists every port of the workload's containers.
func (r renderer) servicePorts() []corev1.ServicePort {
	var out []corev1.ServicePort
	for _, s := range r.w.containers() {
		for _, name := range sortedKeys(s.Ports) {
			out = append(out, servicePort(r.servicePortName(s, name), s.Ports[name]))
		}
	}
	return out
}

func servicePort(name string, port int) corev1.ServicePort {
	return corev1.ServicePort{
		Name: name, Protocol: corev1.ProtocolTCP,
		Port: int32(port), TargetPort: intstr.FromInt(port), //nolint:gosec // validated port
	}
}

// services renders the workload's Service (all its ports, load-balanced),
// the headless discovery Service of a StatefulSet (each member by name,
// ready or not: members must find each other to become ready) and a
// Service per published port.
func (r renderer) services() []client.Object {
	ports := r.servicePorts()
	if len(ports) == 0 {
		return nil
	}
	svc := func(name string, spec corev1.ServiceSpec) *corev1.Service {
		spec.Selector = r.selector()
		return &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: r.meta(name),
			Spec:       spec,
		}
	}
	out := []client.Object{svc(r.w.component, corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports})}
	if r.w.statefulSet() {
		out = append(out, svc(discoveryServiceName(r.w.component), corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone,
			PublishNotReadyAddresses: true, Ports: ports,
		}))
	}
	for _, s := range r.w.containers() {
		for _, p := range s.Publish {
			port := servicePort(p.Port, s.Ports[p.Port])
			spec := corev1.ServiceSpec{Ports: []corev1.ServicePort{port}}
			switch p.Type {
			case runtime.NodePort:
				spec.Type = corev1.ServiceTypeNodePort
				spec.Ports[0].NodePort = int32(p.NodePort) //nolint:gosec // a node port
			case runtime.LoadBalancer:
				spec.Type = corev1.ServiceTypeLoadBalancer
			}
			published := svc(publishedServiceName(s.Component, p.Port), spec)
			published.Labels[ComponentLabel] = s.Component
			out = append(out, published)
		}
	}
	return out
}

// podDisruptionBudget keeps all but one pod of a replicated workload
// through voluntary disruptions (node drains); nil for a single pod, which
// a budget would only block.
func (r renderer) podDisruptionBudget() *policyv1.PodDisruptionBudget {
	if r.w.replicas() < 2 {
		return nil
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: r.meta(r.w.component),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: r.selector()},
		},
	}
}

// Ports outside the control plane that its pods may reach.
const (
	dnsPort = 53
	// The management cluster's API, through the kubernetes Service (443)
	// or at its endpoints (6443): NetworkPolicy sees the endpoint.
	kubernetesServicePort = 443
	kubernetesAPIPort     = 6443
)

// networkPolicy admits to the workload's pods: the control plane's own
// pods (its namespace), anyone on published ports, and the operator on the
// API server's ports. They may reach their namespace, DNS and the
// management cluster's API.
func (r renderer) networkPolicy() *networkingv1.NetworkPolicy {
	sameNamespace := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	ingress := []networkingv1.NetworkPolicyIngressRule{{From: sameNamespace}}
	var published []networkingv1.NetworkPolicyPort
	for _, s := range r.w.containers() {
		for _, p := range s.Publish {
			published = append(published, policyPort(corev1.ProtocolTCP, s.Ports[p.Port]))
		}
	}
	if len(published) > 0 {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{Ports: published})
	}
	// The operator reaches the ports the spec names for it (the API
	// server's, etcd's client port for backups).
	var operatorPorts []networkingv1.NetworkPolicyPort
	for _, name := range slices.Sorted(slices.Values(r.w.spec.OperatorPorts)) {
		if p, ok := r.w.spec.Ports[name]; ok {
			operatorPorts = append(operatorPorts, policyPort(corev1.ProtocolTCP, p))
		}
	}
	if len(operatorPorts) > 0 {
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: r.opts.Namespace},
			}}},
			Ports: operatorPorts,
		})
	}
	egress := []networkingv1.NetworkPolicyEgressRule{
		{To: sameNamespace},
		{Ports: []networkingv1.NetworkPolicyPort{policyPort(corev1.ProtocolUDP, dnsPort), policyPort(corev1.ProtocolTCP, dnsPort)}},
		{Ports: []networkingv1.NetworkPolicyPort{
			policyPort(corev1.ProtocolTCP, kubernetesServicePort), policyPort(corev1.ProtocolTCP, kubernetesAPIPort),
		}},
	}
	if rule := r.restoreEgress(); rule != nil {
		egress = append(egress, *rule)
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: r.meta(r.w.component),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: r.selector()},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress:     ingress,
			Egress:      egress,
		},
	}
}

func policyPort(protocol corev1.Protocol, port int) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(protocol), Port: ptr.To(intstr.FromInt(port))}
}
