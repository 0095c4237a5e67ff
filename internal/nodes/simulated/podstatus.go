package simulated

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What a simulated container reports as its image ID and container ID.
const (
	imageIDPrefix     = "simulated://"
	containerIDPrefix = "simulated://"
)

// simulatedRunning reports whether the agent already reported pod as
// running: phase Running with an IP and a running status for every
// container.
func simulatedRunning(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return false
	}
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// runningStatus is the status a kubelet would report once every container
// of pod started: init containers completed (restartable ones, sidecars,
// running), containers running and ready, pod Ready unless a readiness gate
// says otherwise.
func runningStatus(pod *corev1.Pod, hostIP, podIP string, now metav1.Time) corev1.PodStatus {
	s := *pod.Status.DeepCopy()
	s.Phase = corev1.PodRunning
	s.HostIP = hostIP
	s.HostIPs = []corev1.HostIP{{IP: hostIP}}
	s.PodIP = podIP
	s.PodIPs = []corev1.PodIP{{IP: podIP}}
	if s.StartTime == nil {
		s.StartTime = &now
	}
	s.Reason, s.Message = "", ""
	s.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		cs := containerStatus(pod, c, now)
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			cs.Ready = false
			cs.Started = ptrTo(false)
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now, ContainerID: cs.ContainerID,
			}}
		}
		s.InitContainerStatuses = append(s.InitContainerStatuses, cs)
	}
	s.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, containerStatus(pod, c, now))
	}
	ready := corev1.ConditionTrue
	for _, gate := range pod.Spec.ReadinessGates {
		if !conditionTrue(pod.Status.Conditions, gate.ConditionType) {
			ready = corev1.ConditionFalse
		}
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		status := corev1.ConditionTrue
		if typ == corev1.PodReady {
			status = ready
		}
		setPodCondition(&s, corev1.PodCondition{Type: typ, Status: status, LastTransitionTime: now})
	}
	return s
}

func containerStatus(pod *corev1.Pod, c corev1.Container, now metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     imageIDPrefix + c.Image,
		ContainerID: containerIDPrefix + string(pod.UID) + "/" + c.Name,
		Ready:       true,
		Started:     ptrTo(true),
		State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
	}
}

// terminatedStatus is the status once every container of a deleted pod
// stopped: exit code 0, pod not ready.
func terminatedStatus(pod *corev1.Pod, now metav1.Time) corev1.PodStatus {
	s := *pod.Status.DeepCopy()
	terminate := func(statuses []corev1.ContainerStatus) {
		for i := range statuses {
			cs := &statuses[i]
			if cs.State.Terminated != nil {
				continue
			}
			started := now
			if cs.State.Running != nil {
				started = cs.State.Running.StartedAt
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now, ContainerID: cs.ContainerID,
			}}
			cs.Ready = false
			cs.Started = ptrTo(false)
		}
	}
	terminate(s.InitContainerStatuses)
	terminate(s.ContainerStatuses)
	if s.Phase != corev1.PodFailed {
		s.Phase = corev1.PodSucceeded
	}
	for _, typ := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady, corev1.PodReadyToStartContainers} {
		setPodCondition(&s, corev1.PodCondition{Type: typ, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now})
	}
	return s
}

// allTerminated reports whether every container of pod reported
// termination.
func allTerminated(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) == 0 {
		return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Terminated == nil {
			return false
		}
	}
	return true
}

func setPodCondition(s *corev1.PodStatus, c corev1.PodCondition) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			if s.Conditions[i].Status == c.Status {
				return
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

func conditionTrue(conds []corev1.PodCondition, typ corev1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
