package simulated

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRunningStatus(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "u1"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "setup", Image: "i"}, {Name: "sidecar", Image: "s", RestartPolicy: &always}},
			Containers:     []corev1.Container{{Name: "app", Image: "registry.invalid/pause:1"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	now := metav1.NewTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := runningStatus(pod, "100.64.0.2", "10.132.0.2", now)
	if s.Phase != corev1.PodRunning || s.PodIP != "10.132.0.2" || s.HostIP != "100.64.0.2" || s.StartTime == nil {
		t.Errorf("status %+v", s)
	}
	if len(s.ContainerStatuses) != 1 || s.ContainerStatuses[0].State.Running == nil || !s.ContainerStatuses[0].Ready {
		t.Errorf("container statuses %+v", s.ContainerStatuses)
	}
	if s.InitContainerStatuses[0].State.Terminated == nil || s.InitContainerStatuses[1].State.Running == nil {
		t.Errorf("init containers: want setup completed and the sidecar running: %+v", s.InitContainerStatuses)
	}
	if !conditionTrue(s.Conditions, corev1.PodReady) || !conditionTrue(s.Conditions, corev1.ContainersReady) {
		t.Errorf("conditions %+v", s.Conditions)
	}
	running := pod.DeepCopy()
	running.Status = s
	if !simulatedRunning(running) {
		t.Error("the agent does not recognise its own running status")
	}

	gated := pod.DeepCopy()
	gated.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	if conditionTrue(runningStatus(gated, "h", "p", now).Conditions, corev1.PodReady) {
		t.Error("Ready despite an unmet readiness gate")
	}

	done := running.DeepCopy()
	done.Status = terminatedStatus(running, now)
	if !allTerminated(done) || done.Status.Phase != corev1.PodSucceeded || conditionTrue(done.Status.Conditions, corev1.PodReady) {
		t.Errorf("terminated status %+v", done.Status)
	}
	if allTerminated(running) {
		t.Error("a running pod counts as terminated")
	}
}

func TestKubeletMaySet(t *testing.T) {
	for key, want := range map[string]bool{
		"hypershift.dev/nodepool":              true,
		"gpu":                                  true,
		"node.kubernetes.io/instance-type":     true,
		"topology.kubernetes.io/zone":          true,
		"kubelet.kubernetes.io/x":              true,
		"foo.node.kubernetes.io/x":             true,
		"node-role.kubernetes.io/worker":       false,
		"node-restriction.kubernetes.io/dedic": false,
		"example.k8s.io/x":                     false,
		"kubernetes.io/custom":                 false,
	} {
		if got := KubeletMaySet(key); got != want {
			t.Errorf("KubeletMaySet(%q) = %v, want %v", key, got, want)
		}
	}
}
