// Package simulated is the node agent of the Simulated platform: one process
// per NodePool that plays the machines and kubelets of many nodes. Each node
// joins its hosted cluster the way a kubelet does (bootstrap token, client
// CSR approved by the controller manager, its own client certificate,
// NodeRestriction applies), renews its Lease, reports Ready, and reports the
// pods bound to it as running — without running them.
//
// The NodePool controller tells the agent which machines exist through a
// ConfigMap in the hosted cluster's kube-system (Config); the agent watches
// it, so scaling never restarts the agent.
package simulated

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
)

// Component is the name the agent runs under: `hypershift component
// simulated-agent`.
const Component = "simulated-agent"

// Marks on every simulated Node.
const (
	// SimulatedLabel is "true" on simulated Nodes.
	SimulatedLabel = "hypershift.dev/simulated"
	// SimulatedAnnotation explains what a simulated Node is.
	SimulatedAnnotation = "hypershift.dev/simulated"
	// SimulatedNote is SimulatedAnnotation's value.
	SimulatedNote = "Simulated node: hypershift's node agent reports the pods bound here as running; no container is run."
	// InstanceType is the node.kubernetes.io/instance-type of simulated Nodes.
	InstanceType = "simulated"
)

// ConfigKey is the data key of the config in its ConfigMap.
const ConfigKey = "config.json"

// ConfigMapName is the ConfigMap, in the hosted cluster's kube-system, that
// lists a pool's machines.
func ConfigMapName(pool string) string { return "hypershift-simulated-" + pool }

// Machine is one simulated machine; its node has the machine's name.
type Machine struct {
	Name string `json:"name"`
	// Address is the node's InternalIP. The controller hands them out so
	// they are unique in the cluster.
	Address string `json:"address"`
	// Created is when the controller added the machine.
	Created metav1.Time `json:"created"`
	// KubeletVersion is the version the node reports; empty means
	// Config.KubeletVersion. Changing it restarts the node at the new
	// version under the same name (an in-place upgrade).
	KubeletVersion string `json:"kubeletVersion,omitempty"`
}

// Version is the kubelet version m's node runs under cfg.
func (m Machine) Version(cfg Config) string {
	if m.KubeletVersion != "" {
		return m.KubeletVersion
	}
	return cfg.KubeletVersion
}

// Config is what an agent simulates.
type Config struct {
	Machines []Machine `json:"machines"`
	// Labels are put on Nodes at registration (only those a kubelet may
	// set; the controller adds the others).
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are registered with the Node, as kubelet's --register-with-taints.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// KubeletVersion is reported in the Node's nodeInfo by the nodes of
	// machines that name no version of their own.
	KubeletVersion string `json:"kubeletVersion"`
	// Capacity of every node; empty means DefaultCapacity.
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
}

// DefaultCapacity is a mid-size machine: 8 CPUs, 32 GiB, 110 pods.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}

// ConfigMap renders the config.
func (c Config) ConfigMap(pool string) (*corev1.ConfigMap, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode simulated config: %w", err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem,
			Name:      ConfigMapName(pool),
			Labels:    map[string]string{hypershiftv1alpha1.NodePoolLabel: pool},
		},
		Data: map[string]string{ConfigKey: string(data)},
	}, nil
}

// DecodeConfig reads a config ConfigMap.
func DecodeConfig(cm *corev1.ConfigMap) (Config, error) {
	var c Config
	if err := json.Unmarshal([]byte(cm.Data[ConfigKey]), &c); err != nil {
		return c, fmt.Errorf("decode %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return c, nil
}

// AgentRBAC is what an agent may do with its pool's bootstrap token besides
// bootstrapping nodes: read its ConfigMap, and list and watch Nodes and
// Pods — one watch each for the whole pool, because a node's own identity
// may only watch its own pods. Writes go through each node's own
// credentials, where the Node authorizer and NodeRestriction apply.
func AgentRBAC(pool string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding) {
	name := "hypershift:simulated-agent:" + pool
	labels := map[string]string{hypershiftv1alpha1.NodePoolLabel: pool}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: bootstrap.PoolGroup(pool)}}
	cr := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""},
			Resources: []string{"nodes", "pods"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: labels},
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"configmaps"},
			ResourceNames: []string{ConfigMapName(pool)},
			Verbs:         []string{"get", "list", "watch"},
		}},
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: name, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   subjects,
	}
	return cr, crb, role, rb
}

// KubeletMaySet reports whether NodeRestriction lets a kubelet set a label
// on its own Node: labels outside the kubernetes.io and k8s.io namespaces,
// and the few inside them that kubelets own (k8s.io/kubelet's
// IsKubeletLabel, restated to keep that module out of go.mod).
func KubeletMaySet(key string) bool {
	switch key {
	case corev1.LabelHostname, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
		corev1.LabelFailureDomainBetaZone, corev1.LabelFailureDomainBetaRegion,
		corev1.LabelInstanceType, corev1.LabelInstanceTypeStable, corev1.LabelOSStable, corev1.LabelArchStable,
		"beta.kubernetes.io/os", "beta.kubernetes.io/arch":
		return true
	}
	ns := ""
	for i := range key {
		if key[i] == '/' {
			ns = key[:i]
			break
		}
	}
	inNamespace := func(ns, domain string) bool {
		return ns == domain || (len(ns) > len(domain) && ns[len(ns)-len(domain)-1:] == "."+domain)
	}
	if inNamespace(ns, "kubelet.kubernetes.io") || inNamespace(ns, "node.kubernetes.io") {
		return true
	}
	return !inNamespace(ns, "kubernetes.io") && !inNamespace(ns, "k8s.io")
}
