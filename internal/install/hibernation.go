package install

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// idleWakeRefused is the kube runtime's refusal of spec.hibernation.idleAfter:
// waking on a request needs the process runtime's endpoint proxy, which
// holds the connection while the control plane starts; in front of pods
// scaled to 0 nothing would hold it. Hibernation itself (enabled,
// schedules) works: the workloads are scaled to 0 and back.
func idleWakeRefused() admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{
		Expression: "!has(object.spec.hibernation) || !has(object.spec.hibernation.idleAfter)",
		Message: "spec.hibernation.idleAfter is not supported: the kube runtime cannot hold a request while the control plane sleeps;" +
			" use spec.hibernation.enabled or spec.hibernation.schedules (waking on a request needs the process runtime of `hypershift up`)",
		Reason: ptr(metav1.StatusReasonInvalid),
	}
}
