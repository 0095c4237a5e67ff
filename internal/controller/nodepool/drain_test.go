package nodepool

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestWithTaints(t *testing.T) {
	have := []corev1.Taint{{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Value: "old", Effect: corev1.TaintEffectNoSchedule}}
	got, changed := withTaints(have, nil)
	if changed || len(got) != 2 {
		t.Errorf("no pool taints changed the node's: %v", got)
	}
	got, changed = withTaints(have, []hypershiftv1alpha1.Taint{{Key: "gpu", Value: "new", Effect: corev1.TaintEffectNoSchedule}, {Key: "spot", Effect: corev1.TaintEffectNoExecute}})
	if !changed || fmt.Sprint(got) != "[{node.kubernetes.io/unschedulable  NoSchedule <nil>} {gpu new NoSchedule <nil>} {spot  NoExecute <nil>}]" {
		t.Errorf("got %v (changed %v)", got, changed)
	}
}
