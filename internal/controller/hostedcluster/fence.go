package hostedcluster

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/conditions"
)

// decideFence is the HostedCluster controller's decision on the fence
// annotation, given the control plane as it is (live) and the hibernation
// just decided for it. It returns whether the control plane is fenced and,
// when a requested fence is not applied, why.
//
// Fence and hibernation exclude each other, and the one that holds first
// wins: a sleeping control plane is not woken to be fenced (the fence
// applies once it runs again), and while fenced the hibernation decision
// waits (the caller keeps the control plane awake, etcd only).
//
// Every runtime fences: the process runtime stops every instance but
// etcd's; the kube runtime scales every Deployment to 0 in place, keeping
// etcd, the Services (node ports, load balancer addresses) and the volumes.
func decideFence(hc *hypershiftv1alpha1.HostedCluster, live *hypershiftv1alpha1.HostedControlPlane, hib *hypershiftv1alpha1.ControlPlaneHibernation) (bool, string) {
	v, ok := hc.Annotations[hypershiftv1alpha1.FencedAnnotation]
	switch {
	case !ok || v == "false":
		return false, ""
	case v != "true":
		return false, fmt.Sprintf("annotation %s is %q: set it to \"true\" to fence the control plane, or remove it", hypershiftv1alpha1.FencedAnnotation, v)
	}
	alreadyFenced := live != nil && live.Annotations[hypershiftv1alpha1.FencedAnnotation] == "true"
	if !alreadyFenced && hib != nil && hib.Hibernated {
		return false, fmt.Sprintf("the control plane is hibernated (%s): it is not woken to be fenced; the fence applies once it runs again (`hypershift resume cluster %s -n %s`)", hib.Reason, hc.Name, hc.Namespace)
	}
	return true, ""
}

// applyFence writes the fence decision onto the HostedControlPlane: the
// annotation, and a hibernation held while fenced.
func applyFence(hcp *hypershiftv1alpha1.HostedControlPlane, fence bool) {
	if !fence {
		delete(hcp.Annotations, hypershiftv1alpha1.FencedAnnotation)
		return
	}
	metav1.SetMetaDataAnnotation(&hcp.ObjectMeta, hypershiftv1alpha1.FencedAnnotation, "true")
	if h := hcp.Spec.Hibernation; h != nil && h.Hibernated {
		held := *h
		held.Hibernated, held.Reason = false, ""
		hcp.Spec.Hibernation = &held
	}
}

// reportFenceRefused overrides the mirrored Fenced condition when a
// requested fence is not applied.
func reportFenceRefused(s *scope) {
	if s.fenceRefused == "" {
		return
	}
	conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hypershiftv1alpha1.Fenced, false,
		hypershiftv1alpha1.FenceRefusedReason, s.fenceRefused)
}
