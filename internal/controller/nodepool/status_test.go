package nodepool

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	nodeplatform "hypershift.dev/internal/controller/nodepool/platform"
)

// TestUpdateStatus: a pool whose platform's machines report their
// readiness and versions (Host: Cluster API's Machines) takes
// readyReplicas, version and the conditions from them, not from its
// Nodes; a platform whose machines report nothing (None, Simulated) takes
// them from the Nodes.
func TestUpdateStatus(t *testing.T) {
	const oldV, newV = "v1.36.3", "v1.37.1"
	type cond struct {
		status  metav1.ConditionStatus
		reason  hypershiftv1alpha1.ConditionReason
		message string // a prefix
	}
	readyNodes := map[string]*corev1.Node{"a": testNode(newV, true), "b": testNode(newV, true), "c": testNode(newV, true)}
	tests := []struct {
		name     string
		platform hypershiftv1alpha1.PlatformType
		nodes    map[string]*corev1.Node
		machines machineReport
		// version is status.version before; want the pool's size (3 when
		// zero).
		version string
		want    int32

		readyReplicas int32
		wantVersion   string
		conditions    map[hypershiftv1alpha1.ConditionType]cond
	}{
		{
			name: "Host: a Machine not Ready while every Node is", platform: hypershiftv1alpha1.HostPlatform, nodes: readyNodes,
			machines: machineReport{machines: 3, status: &nodeplatform.MachineStatus{
				Ready: 2, Registered: 3, NotReady: []string{"workers-c"}, Versions: []string{newV},
			}},
			readyReplicas: 2, wantVersion: newV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolAllMachinesReady: {metav1.ConditionFalse, hypershiftv1alpha1.NodesNotReadyReason, "1 of 3 machines are not Ready: workers-c"},
				hypershiftv1alpha1.NodePoolAllNodesHealthy:  {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "All 3 nodes are healthy"},
				hypershiftv1alpha1.NodePoolReady:            {metav1.ConditionFalse, hypershiftv1alpha1.WaitingForNodesReason, "2 of 3 nodes Ready"},
			},
		},
		{
			name: "Host: a Node not healthy", platform: hypershiftv1alpha1.HostPlatform, nodes: readyNodes,
			machines: machineReport{machines: 3, status: &nodeplatform.MachineStatus{
				Ready: 2, Registered: 3, NotReady: []string{"workers-c"}, Unhealthy: []string{"c"}, Versions: []string{newV},
			}},
			readyReplicas: 2, wantVersion: newV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolAllNodesHealthy: {metav1.ConditionFalse, hypershiftv1alpha1.NodesNotReadyReason, "1 of 3 nodes are not healthy: c"},
			},
		},
		{
			name: "Host: every Machine Ready", platform: hypershiftv1alpha1.HostPlatform, nodes: readyNodes,
			machines:      machineReport{machines: 3, status: &nodeplatform.MachineStatus{Ready: 3, Registered: 3, Versions: []string{newV}}},
			readyReplicas: 3, version: oldV, wantVersion: newV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolAllMachinesReady: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "All 3 machines are Ready"},
				hypershiftv1alpha1.NodePoolReady:            {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "3 of 3 nodes Ready"},
				hypershiftv1alpha1.NodePoolUpdatingVersion:  {metav1.ConditionFalse, hypershiftv1alpha1.AsExpectedReason, "All 3 machines run " + newV},
			},
		},
		{
			// The pool's Nodes (the new machines') all run the new
			// version; a Machine of the old one is still there.
			name: "Host: a Replace rollout, versions from the Machines", platform: hypershiftv1alpha1.HostPlatform,
			nodes: map[string]*corev1.Node{"a": testNode(newV, true), "b": testNode(newV, true)},
			machines: machineReport{machines: 3, rollout: "Replacing 1 of 3 machines with machines of " + newV, status: &nodeplatform.MachineStatus{
				Ready: 3, Registered: 3, Versions: []string{oldV, newV},
			}},
			version: oldV, readyReplicas: 3, wantVersion: oldV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolUpdatingVersion: {metav1.ConditionTrue, hypershiftv1alpha1.RollingOutReason, "Replacing 1 of 3 machines"},
			},
		},
		{
			name: "Host: the old Machine being deleted still runs its version", platform: hypershiftv1alpha1.HostPlatform,
			nodes: map[string]*corev1.Node{"a": testNode(newV, true), "b": testNode(newV, true)},
			machines: machineReport{machines: 3, draining: []string{"old"}, status: &nodeplatform.MachineStatus{
				Ready: 2, Registered: 2, Versions: []string{oldV, newV},
			}},
			version: oldV, readyReplicas: 2, wantVersion: oldV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolUpdatingVersion: {metav1.ConditionTrue, hypershiftv1alpha1.RollingOutReason, "Nodes run " + oldV + ", " + newV + ", moving to " + newV},
				hypershiftv1alpha1.NodePoolReady:           {metav1.ConditionFalse, hypershiftv1alpha1.ScalingDownReason, "Draining old before removal"},
			},
		},
		{
			name: "Host: versions left out are counted", platform: hypershiftv1alpha1.HostPlatform, nodes: readyNodes,
			machines: machineReport{machines: 3, status: &nodeplatform.MachineStatus{
				Ready: 3, Registered: 3, Versions: []string{newV}, OtherVersions: 2,
			}},
			version: oldV, readyReplicas: 3, wantVersion: oldV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolUpdatingVersion: {metav1.ConditionTrue, hypershiftv1alpha1.RollingOutReason, "Nodes run " + newV + " and 2 other versions, moving to " + newV},
			},
		},
		{
			name: "Simulated: the Nodes", platform: hypershiftv1alpha1.SimulatedPlatform,
			nodes:         map[string]*corev1.Node{"a": testNode(newV, true), "b": testNode(newV, true), "c": testNode(newV, false)},
			machines:      machineReport{machines: 3},
			version:       oldV,
			readyReplicas: 2, wantVersion: newV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolAllMachinesReady: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "All 3 machines have registered their node"},
				hypershiftv1alpha1.NodePoolAllNodesHealthy:  {metav1.ConditionFalse, hypershiftv1alpha1.NodesNotReadyReason, "1 of 3 nodes are not Ready: c"},
				hypershiftv1alpha1.NodePoolUpdatingVersion:  {metav1.ConditionFalse, hypershiftv1alpha1.AsExpectedReason, "All 3 nodes run " + newV},
			},
		},
		{
			name: "None: Nodes at two versions", platform: hypershiftv1alpha1.NonePlatform,
			nodes:   map[string]*corev1.Node{"a": testNode(oldV, true), "b": testNode(newV, true)},
			version: oldV, want: 2, readyReplicas: 2, wantVersion: oldV,
			conditions: map[hypershiftv1alpha1.ConditionType]cond{
				hypershiftv1alpha1.NodePoolAllNodesHealthy: {metav1.ConditionTrue, hypershiftv1alpha1.AsExpectedReason, "All 2 nodes are Ready"},
				hypershiftv1alpha1.NodePoolUpdatingVersion: {metav1.ConditionFalse, hypershiftv1alpha1.UnsupportedReason, "Nodes run " + oldV + ", " + newV + ", spec.kubernetesVersion is " + newV},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := &hypershiftv1alpha1.NodePool{Status: hypershiftv1alpha1.NodePoolStatus{Version: tt.version}}
			np.Spec.Management.UpgradeType = hypershiftv1alpha1.UpgradeTypeReplace
			s := &scope{
				np: np, hosted: &hostedCluster{}, nodes: tt.nodes, machines: tt.machines,
				platform: newPlatform(&Reconciler{}, tt.platform), want: tt.want, version: newV,
			}
			if s.want == 0 {
				s.want = 3
			}
			(&Reconciler{}).updateStatus(s)
			if np.Status.ReadyReplicas != tt.readyReplicas || np.Status.Replicas != tt.machines.machines {
				t.Errorf("replicas %d, readyReplicas %d; want %d, %d", np.Status.Replicas, np.Status.ReadyReplicas, tt.machines.machines, tt.readyReplicas)
			}
			if np.Status.Version != tt.wantVersion {
				t.Errorf("version %q, want %q", np.Status.Version, tt.wantVersion)
			}
			for typ, want := range tt.conditions {
				c := meta.FindStatusCondition(np.Status.Conditions, string(typ))
				if c == nil {
					t.Errorf("no %s condition", typ)
					continue
				}
				if c.Status != want.status || c.Reason != want.reason.String() || !strings.HasPrefix(c.Message, want.message) {
					t.Errorf("%s %s/%s %q, want %s/%s %q", typ, c.Status, c.Reason, c.Message, want.status, want.reason, want.message)
				}
			}
		})
	}
}

// testNode is a Node bound to the pool, of that kubelet version.
func testNode(kubeletVersion string, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{Status: corev1.NodeStatus{
		NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: kubeletVersion},
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
	}}
}
