package simulated

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errWaitingForPodCIDR: the controller manager has not given the node a pod
// range yet; the pod is synced again when it does.
var errWaitingForPodCIDR = errors.New("node has no pod CIDR yet")

// syncPod plays the kubelet for one pod bound to the node: a new pod is
// reported running with an IP from the node's range; a deleted one is
// reported terminated and then removed.
func (n *node) syncPod(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return n.terminatePod(ctx, pod)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	ips := n.podIPs()
	if simulatedRunning(pod) {
		if ip, err := netip.ParseAddr(pod.Status.PodIP); err == nil && ips != nil && !pod.Spec.HostNetwork {
			ips.Reserve(pod.UID, ip)
		}
		return nil
	}
	podIP := n.m.Address
	if !pod.Spec.HostNetwork {
		if ips == nil {
			return errWaitingForPodCIDR
		}
		ip, err := ips.Allocate(pod.UID)
		if err != nil {
			return err
		}
		podIP = ip.String()
	}
	updated := pod.DeepCopy()
	updated.Status = runningStatus(pod, n.m.Address, podIP, metav1.Now())
	if _, err := n.core.Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("report pod %s/%s running: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// terminatePod reports a deleted pod's containers stopped, then removes the
// pod with no further grace, as a kubelet does once they exit.
func (n *node) terminatePod(ctx context.Context, pod *corev1.Pod) error {
	if !allTerminated(pod) {
		updated := pod.DeepCopy()
		updated.Status = terminatedStatus(pod, metav1.Now())
		if _, err := n.core.Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				n.releasePodIP(pod)
				return nil
			}
			return fmt.Errorf("report pod %s/%s terminated: %w", pod.Namespace, pod.Name, err)
		}
	}
	uid := pod.UID
	err := n.core.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptrTo(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	n.releasePodIP(pod)
	return nil
}

func (n *node) releasePodIP(pod *corev1.Pod) {
	if ips := n.podIPs(); ips != nil {
		ips.Release(pod.UID)
	}
}
