package kube

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// Fence stops every writer of the control plane's etcd in place: it
// applies specs as Apply does, with every Deployment (API servers,
// controller manager, scheduler, Konnectivity server) at 0 replicas. etcd's
// StatefulSet, the Services (their node ports and load balancer
// addresses), the Secrets and etcd's volumes stay as they are, so lifting
// the fence is the next Apply, which declares the replicas again.
//
// It returns what may still write: each Deployment whose controller has
// not scaled it down yet, and each pod of the control plane that is not a
// member of a StatefulSet (a terminating API server still serves until its
// process ends). Pods are read from the API server, not a cache, so a pod
// made a moment ago is not missed. Empty: only etcd runs.
func (r *Runtime) Fence(ctx context.Context, ref runtime.ControlPlaneRef, specs []runtime.Spec) ([]string, error) {
	workloads, err := groupWorkloads(specs)
	if err != nil {
		return nil, err
	}
	if err := r.applyControlPlane(ctx, ref, specs, withoutWriters); err != nil {
		return nil, err
	}
	keep := map[string]bool{} // components whose pods are etcd's members
	var writers []string
	for _, w := range workloads {
		if w.statefulSet() {
			keep[w.component] = true
			continue
		}
		writers = append(writers, w.component)
	}
	left, err := r.deploymentsNotScaledDown(ctx, ref, writers)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := r.apiReader().List(ctx, pods, client.InNamespace(ref.Namespace), client.MatchingLabels{ControlPlaneLabel: ref.Name}); err != nil {
		return nil, fmt.Errorf("list pods of control plane %s: %w", ref.Namespace, err)
	}
	var podsLeft []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if keep[p.Labels[ComponentLabel]] {
			continue
		}
		state := string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			state = "terminating"
		}
		podsLeft = append(podsLeft, fmt.Sprintf("pod %s is %s", p.Name, state))
	}
	sort.Strings(podsLeft)
	return append(left, podsLeft...), nil
}

// withoutWriters declares 0 replicas for a Deployment: every workload but
// etcd's StatefulSet.
func withoutWriters(obj client.Object) {
	if d, ok := obj.(*appsv1.Deployment); ok {
		d.Spec.Replicas = ptr.To[int32](0)
	}
}

// deploymentsNotScaledDown names the Deployments of components whose
// controller has not yet seen the scale to 0 or still counts pods.
func (r *Runtime) deploymentsNotScaledDown(ctx context.Context, ref runtime.ControlPlaneRef, components []string) ([]string, error) {
	var left []string
	for _, component := range components {
		d := &appsv1.Deployment{}
		err := r.apiReader().Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: component}, d)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("read Deployment %s/%s: %w", ref.Namespace, component, err)
		case d.Status.ObservedGeneration < d.Generation:
			left = append(left, fmt.Sprintf("Deployment %s is not scaled down yet", component))
		case d.Status.Replicas > 0:
			left = append(left, fmt.Sprintf("Deployment %s has %d pods", component, d.Status.Replicas))
		}
	}
	return left, nil
}
