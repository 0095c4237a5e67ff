// Package nodetest has helpers for tests of code that reads nodes and the
// pods on them.
package nodetest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Node is a Node named name whose Ready condition is ready.
func Node(name string, ready bool, annotations map[string]string) *corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

// PodNames lists the pods' names, for comparing pod selections in one line.
func PodNames(pods []*corev1.Pod) string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return fmt.Sprint(out)
}
