package simulated

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hypershift.dev/internal/nodes/drain"
	"hypershift.dev/internal/nodes/nodetest"
	simagent "hypershift.dev/internal/nodes/simulated"
)

func TestScaleDownOrder(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(name string, age time.Duration) simagent.Machine {
		return simagent.Machine{Name: name, Created: metav1.NewTime(t0.Add(-age))}
	}
	machines := []simagent.Machine{
		m("old", 3*time.Hour), m("new", time.Minute), m("mid", time.Hour),
		m("sick", 2*time.Hour), m("unregistered", 4*time.Hour), m("draining", 5*time.Hour),
	}
	nodes := map[string]*corev1.Node{
		"old":      nodetest.Node("old", true, nil),
		"new":      nodetest.Node("new", true, nil),
		"mid":      nodetest.Node("mid", true, nil),
		"sick":     nodetest.Node("sick", false, nil),
		"draining": nodetest.Node("draining", true, map[string]string{drain.StartedAnnotation: t0.Format(time.RFC3339)}),
	}
	var got []string
	for _, m := range scaleDownOrder(machines, nodes) {
		got = append(got, m.Name)
	}
	if fmt.Sprint(got) != "[draining unregistered sick new mid old]" {
		t.Errorf("order %v, want draining, unregistered, NotReady, then newest first", got)
	}
}

func TestUnhealthy(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(name string, age time.Duration) simagent.Machine {
		return simagent.Machine{Name: name, Created: metav1.NewTime(t0.Add(-age))}
	}
	notReadySince := func(name string, d time.Duration) *corev1.Node {
		n := nodetest.Node(name, false, nil)
		n.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(-d))
		return n
	}
	machines := []simagent.Machine{
		m("healthy", time.Hour), m("down-long", time.Hour), m("down-briefly", time.Hour),
		m("never-joined", 11*time.Minute), m("joining", time.Minute),
	}
	nodes := map[string]*corev1.Node{
		"healthy":      nodetest.Node("healthy", true, nil),
		"down-long":    notReadySince("down-long", 6*time.Minute),
		"down-briefly": notReadySince("down-briefly", 2*time.Minute),
	}
	bad, next := unhealthy(machines, nodes, t0)
	if fmt.Sprint(bad) != "[down-long never-joined]" {
		t.Errorf("replaced %v, want [down-long never-joined]", bad)
	}
	if want := t0.Add(3 * time.Minute); !next.Equal(want) {
		t.Errorf("next check at %s, want %s (down-briefly reaching 5 minutes)", next, want)
	}
}
