package none

import (
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/drain"
)

func readyNode(name, version string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: version},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

// TestInPlaceRollout walks a pool of two joined nodes from v1.36.3 to
// v1.37.1 with maxUnavailable 1: one node at a time is cordoned and told
// the version (the annotation its node daemon watches), uncordoned once it
// reports that version and Ready, and only then is the next one moved.
func TestInPlaceRollout(t *testing.T) {
	kube := fake.NewClientset(readyNode("a", "v1.36.3"), readyNode("b", "v1.36.3"))
	np := &hypershiftv1alpha1.NodePool{Spec: hypershiftv1alpha1.NodePoolSpec{
		KubernetesVersion: "v1.37.1",
		Management: hypershiftv1alpha1.NodePoolManagement{
			UpgradeType: hypershiftv1alpha1.UpgradeTypeInPlace,
			InPlace:     &hypershiftv1alpha1.InPlaceUpgrade{MaxUnavailable: ptr.To(intstr.FromInt32(1))},
		},
	}}
	nodes := func() map[string]*corev1.Node {
		out := map[string]*corev1.Node{}
		list, err := kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
		return out
	}
	pass := func() platform.Report {
		t.Helper()
		r, err := Platform{}.Reconcile(t.Context(), &platform.Pool{
			NodePool: np, Log: logr.Discard(), Nodes: nodes(), Version: "v1.37.1",
			Cluster: &platform.Cluster{Kube: kube},
		}, 2)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// moved reports, per node, whether it is cordoned and the version it was told.
	state := func() map[string]string {
		out := map[string]string{}
		for name, n := range nodes() {
			s := n.Annotations[hypershiftv1alpha1.NodeKubernetesVersionAnnotation]
			if n.Spec.Unschedulable || drain.Draining(n) {
				s += " cordoned"
			}
			out[name] = s
		}
		return out
	}
	report := func(node, version string) {
		n := nodes()[node]
		n.Status.NodeInfo.KubeletVersion = version
		if _, err := kube.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if r := pass(); r.Rollout == "" || !r.Busy {
		t.Fatalf("first pass reports no rollout: %+v", r)
	}
	if s := state(); s["a"] != "v1.37.1 cordoned" || s["b"] != "" {
		t.Fatalf("after the first pass: %v, want a cordoned and told v1.37.1, b untouched", s)
	}
	pass() // a still runs v1.36.3: b must wait
	if s := state(); s["b"] != "" {
		t.Fatalf("b moved while a is unavailable: %v", s)
	}
	report("a", "v1.37.1")
	pass()
	if s := state(); s["a"] != "v1.37.1" || s["b"] != "v1.37.1 cordoned" {
		t.Fatalf("after a reports v1.37.1: %v, want a uncordoned, b cordoned and told v1.37.1", s)
	}
	report("b", "v1.37.1")
	pass()
	if s := state(); s["a"] != "v1.37.1" || s["b"] != "v1.37.1" {
		t.Fatalf("after b reports v1.37.1: %v, want both uncordoned", s)
	}
	if r := pass(); r.Rollout != "" || r.Busy {
		t.Fatalf("a finished rollout still reports %+v", r)
	}

	// A Replace pool (the default) leaves its nodes alone.
	np.Spec.Management = hypershiftv1alpha1.NodePoolManagement{}
	np.Spec.KubernetesVersion = "v1.38.0"
	if r := pass(); r.Rollout != "" {
		t.Fatalf("Replace pool on platform None rolled: %+v", r)
	}
}
