package dataplane

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeProxierBinding grants nodes (group system:nodes) kube-proxy's role:
// kube-proxy runs on each node with the kubelet's client certificate. The
// name is not the bootstrap policy's `system:node-proxier` binding (user
// system:kube-proxy), which the API server reconciles on every start.
const NodeProxierBinding = "hypershift:node-proxier"

// kubernetesEndpoints point the `kubernetes` Service at address:port, each
// node's local proxy of the hosted API server (its API servers run without
// an endpoint reconciler: their own addresses are not reachable from pods).
func kubernetesEndpoints(address string, port int32) []client.Object {
	const name = "kubernetes"
	return []client.Object{
		&corev1.Endpoints{ //nolint:staticcheck // the kubernetes Service's Endpoints are still read (kube-proxy fallbacks, older clients)
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Endpoints"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: metav1.NamespaceDefault, Name: name,
				// The mirroring controller leaves these alone: the
				// EndpointSlice below is written here too.
				Labels: map[string]string{discoveryv1.LabelSkipMirror: "true"},
			},
			Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // see above
				Addresses: []corev1.EndpointAddress{{IP: address}},
				Ports:     []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}},
			}},
		},
		&discoveryv1.EndpointSlice{
			TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: metav1.NamespaceDefault, Name: name,
				Labels: map[string]string{
					discoveryv1.LabelServiceName: name,
					discoveryv1.LabelManagedBy:   "hypershift.dev",
				},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{
				Addresses:  []string{address},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			}},
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		},
	}
}

func nodeProxierBinding() client.Object {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: NodeProxierBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-proxier"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}},
	}
}
