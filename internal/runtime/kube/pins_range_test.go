package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPinPortOutsideNodePortRange: an archived host port of the process
// runtime (a migration from it) is not pinned as a node port, which every
// Apply of the Service would then fail on; the error names the range.
func TestPinPortOutsideNodePortRange(t *testing.T) {
	c := startAPIServer(t).Client
	ref := testRef
	ref.Namespace = "clusters-pin-range"
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}); err != nil {
		t.Fatal(err)
	}
	rt := New(c, testOptions())
	pinned, err := rt.PinPorts(ref, map[string]int{"endpoint": 41234})
	if pinned || err == nil || !strings.Contains(err.Error(), "outside the node port range 30000-32767") {
		t.Errorf("pin 41234: %v, %v; want refused naming the node port range", pinned, err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: ref.Namespace}, ns); err != nil {
		t.Fatal(err)
	}
	if v, ok := ns.Annotations[PinnedNodePortsAnnotation]; ok {
		t.Errorf("the refused pin was recorded: %s", v)
	}
	if pinned, err := rt.PinPorts(ref, map[string]int{"endpoint": 30555}); !pinned || err != nil {
		t.Errorf("pin 30555: %v, %v; want pinned", pinned, err)
	}
}
