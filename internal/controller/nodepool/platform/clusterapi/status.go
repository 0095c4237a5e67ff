package clusterapi

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/drain"
)

// Conditions of a Cluster API Machine (v1beta2) that the pool's status
// reads.
const (
	// machineReadyCondition: its infrastructure and bootstrap are ready,
	// its Node healthy, no health check failed, and it is not being
	// deleted or updated.
	machineReadyCondition = "Ready"
	// machineNodeHealthyCondition: its Node is Ready and reports no
	// memory, disk or PID pressure.
	machineNodeHealthyCondition = "NodeHealthy"
)

// machineStatus is what the pool's Machines say of their readiness and
// versions. A Machine is ready when Cluster API says so (Ready True), it
// is not being deleted (Cluster API's Ready may not say so yet) and its
// Node is bound to the pool and Ready as the controller sees it: Cluster
// API's view of a Node lags the controller's by a watch event, and the
// pool reports no node Ready that it sees NotReady. Versions are those of
// every Machine's Node, being deleted or not: until it is gone it still
// runs.
func machineStatus(pool *platform.Pool, machines []unstructured.Unstructured) *platform.MachineStatus {
	st := &platform.MachineStatus{}
	var versions []string
	for i := range machines {
		m := &machines[i]
		if v, _, _ := unstructured.NestedString(m.Object, "status", "nodeInfo", "kubeletVersion"); v != "" {
			versions = append(versions, v)
		}
		nodeName, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		if nodeName == "" || !m.GetDeletionTimestamp().IsZero() {
			continue
		}
		st.Registered++
		node := pool.Nodes[nodeName]
		nodeReady := node != nil && drain.NodeReady(node)
		if nodeReady && conditionTrue(m, machineReadyCondition) {
			st.Ready++
		} else {
			st.NotReady = append(st.NotReady, m.GetName())
		}
		if !nodeReady || !conditionTrue(m, machineNodeHealthyCondition) {
			st.Unhealthy = append(st.Unhealthy, nodeName)
		}
	}
	st.Machines = reported(machines)
	slices.Sort(st.NotReady)
	slices.Sort(st.Unhealthy)
	st.Versions, st.OtherVersions = platform.KubeletVersions(versions)
	return st
}

// conditionTrue says whether the Machine's condition of that type is
// True.
func conditionTrue(m *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
	for _, c := range conds {
		if cm, ok := c.(map[string]any); ok && cm["type"] == typ {
			return cm["status"] == "True"
		}
	}
	return false
}

// MaxReportedMachines bounds the machines a pool's status lists.
const MaxReportedMachines = 100

// addressTypes are the address types Cluster API's Machines carry.
var addressTypes = []string{"Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"}

// reported is what the pool's status says of each Machine, as its
// provider reported it through Cluster API: name, Node, provider ID,
// addresses, readiness and failure, bounded in number and length (the
// values come from the infrastructure), sorted by name.
func reported(machines []unstructured.Unstructured) []hypershiftv1alpha1.NodePoolMachine {
	out := make([]hypershiftv1alpha1.NodePoolMachine, 0, min(len(machines), MaxReportedMachines))
	for i := range machines {
		m := &machines[i]
		node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
		id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		r := hypershiftv1alpha1.NodePoolMachine{
			Name: m.GetName(), NodeName: node, ProviderID: truncate(id, 500),
			Ready: conditionTrue(m, machineReadyCondition),
		}
		addrs, _, _ := unstructured.NestedSlice(m.Object, "status", "addresses")
		for _, a := range addrs {
			am, _ := a.(map[string]any)
			typ, _ := am["type"].(string)
			addr, _ := am["address"].(string)
			if slices.Contains(addressTypes, typ) && addr != "" && len(addr) <= 256 && len(r.Addresses) < 8 {
				r.Addresses = append(r.Addresses, hypershiftv1alpha1.MachineAddress{Type: typ, Address: addr})
			}
		}
		if msg := failure(m); msg != "" {
			r.Failure = truncate(msg, 1000)
		} else if msg := failing(m, "InfrastructureReady", "BootstrapConfigReady"); msg != "" {
			r.Failure = truncate(msg, 1000)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b hypershiftv1alpha1.NodePoolMachine) int { return strings.Compare(a.Name, b.Name) })
	return out[:min(len(out), MaxReportedMachines)]
}
