package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// statusTimeout bounds the reads of Status, which has no context: they are
// served by the manager's cache.
const statusTimeout = 10 * time.Second

// Status implements runtime.Runtime: one status per instance the last
// Apply ran, from its pod. A StatefulSet's pods are its instances by
// ordinal; a Deployment's, sorted by name, are given the instance names in
// order. A sidecar instance (Beside) is its container in the same pod.
func (r *Runtime) Status(ref runtime.ControlPlaneRef) []runtime.InstanceStatus {
	r.mu.Lock()
	workloads := r.applied[ref]
	r.mu.Unlock()
	if len(workloads) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	pods := &corev1.PodList{}
	listErr := r.client.List(ctx, pods, client.InNamespace(ref.Namespace), ownLabels(ref))
	byComponent := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		byComponent[p.Labels[ComponentLabel]] = append(byComponent[p.Labels[ComponentLabel]], p)
	}
	var out []runtime.InstanceStatus
	for _, w := range workloads {
		podOf := podsOfInstances(w, byComponent[w.component])
		for i := range w.instances {
			st := instanceStatus(w.instances[i], w.component, podOf[i], listErr)
			if podOf[i] != nil {
				st.Version = podOf[i].Annotations[KubernetesVersionAnnotation]
			}
			out = append(out, st)
			for _, sc := range w.sidecars {
				out = append(out, instanceStatus(sc.instances[i], sc.spec.Component, podOf[i], listErr))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// podsOfInstances gives each instance of w its pod, or nil.
func podsOfInstances(w *workload, pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(w.instances))
	if w.statefulSet() {
		byName := map[string]*corev1.Pod{}
		for _, p := range pods {
			byName[p.Name] = p
		}
		for i := range out {
			out[i] = byName[fmt.Sprintf("%s-%d", w.component, i)]
		}
		return out
	}
	// Pods on their way out (a rollout's old ones being deleted, evicted or
	// finished ones) come last; of the others the newest first: during a
	// rollout the new pods are what the control plane waits for, and one
	// that crash-loops must show, not hide behind a ready old one.
	sort.SliceStable(pods, func(i, j int) bool {
		ei, ej := ending(pods[i]), ending(pods[j])
		if ei != ej {
			return ej
		}
		ci, cj := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !ci.Equal(&cj) {
			return cj.Before(&ci)
		}
		return pods[i].Name < pods[j].Name
	})
	copy(out, pods)
	return out
}

// ending: the pod is deleted or has finished (evicted pods stay Failed
// until collected).
func ending(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// instanceStatus reads one instance's state from its container in pod.
func instanceStatus(name, component string, pod *corev1.Pod, listErr error) runtime.InstanceStatus {
	st := runtime.InstanceStatus{Name: name, Component: component}
	switch {
	case listErr != nil:
		st.Phase, st.Message = runtime.Starting, fmt.Sprintf("list pods: %v", listErr)
		return st
	case pod == nil:
		st.Phase, st.Message = runtime.Stopped, "no pod"
		return st
	case ending(pod):
		st.Phase, st.Message = runtime.Stopped, fmt.Sprintf("pod %s is %s", pod.Name, podState(pod))
		return st
	}
	if msg := initFailure(pod); msg != "" {
		st.Phase, st.Message = runtime.BackOff, fmt.Sprintf("pod %s: %s", pod.Name, msg)
		return st
	}
	cs := containerStatus(pod, component)
	if cs == nil {
		st.Phase, st.Message = runtime.Starting, fmt.Sprintf("pod %s: %s", pod.Name, pendingReason(pod))
		return st
	}
	st.Restarts = int(cs.RestartCount)
	var lastWords string
	if t := cs.LastTerminationState.Terminated; t != nil {
		st.LastExitReason = fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
		lastWords = logTail(t.Message)
	}
	if t := cs.State.Terminated; t != nil && t.Message != "" {
		lastWords = logTail(t.Message)
	}
	switch {
	case cs.State.Running != nil && cs.Ready:
		st.Phase, st.Message = runtime.Running, "pod "+pod.Name
		st.StartedAt = cs.State.Running.StartedAt.Time
	case cs.State.Running != nil:
		st.Phase, st.Message = runtime.Starting, fmt.Sprintf("pod %s: running, not ready", pod.Name)
		st.StartedAt = cs.State.Running.StartedAt.Time
	case cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff":
		st.Phase, st.Message = runtime.BackOff, fmt.Sprintf("pod %s: %s", pod.Name, cs.State.Waiting.Message)
	case cs.State.Terminated != nil:
		st.Phase, st.Message = runtime.BackOff, fmt.Sprintf("pod %s: exited (%s)", pod.Name, cs.State.Terminated.Reason)
	case cs.State.Waiting != nil:
		st.Phase, st.Message = runtime.Starting, fmt.Sprintf("pod %s: %s %s", pod.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
	default:
		st.Phase, st.Message = runtime.Starting, "pod "+pod.Name
	}
	if st.Phase == runtime.BackOff && lastWords != "" {
		st.Message += ": " + lastWords
	}
	return st
}

// logTail is the last lines of a container's termination message (its
// last log lines, by FallbackToLogsOnError), as the process runtime
// reports an exited process's log.
func logTail(message string) string {
	const lines, maxLen = 5, 1024
	out := strings.TrimSpace(runtime.LastLines(message, lines))
	if len(out) > maxLen {
		out = "…" + strings.ToValidUTF8(out[len(out)-maxLen:], "")
	}
	return out
}

// initFailure says why an init container of pod (the restore) keeps
// failing, with its last words; "" when none has failed or it has since
// succeeded.
func initFailure(pod *corev1.Pod) string {
	for _, cs := range pod.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode == 0 {
			continue
		}
		return fmt.Sprintf("init container %s failed %d times, last (exit code %d): %s", cs.Name, cs.RestartCount+1, t.ExitCode, strings.TrimSpace(t.Message))
	}
	return ""
}

func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func podState(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "terminating"
	}
	return string(pod.Status.Phase)
}

// pendingReason says why a pod's containers have not started: the
// scheduler's verdict when it has one.
func pendingReason(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("not scheduled: %s %s", c.Reason, c.Message)
		}
	}
	return "pending"
}

// Published implements runtime.Runtime for the port published as name
// (Publish.Name): a NodePort is reached at the published Address and the
// node port, once allocated; a LoadBalancer at its Address (the load
// balancer's DNS name) and the Service's port, once the load balancer is
// provisioned.
func (r *Runtime) Published(ctx context.Context, ref runtime.ControlPlaneRef, name string) (string, int, bool, error) {
	spec, pub, ok := r.publishedSpec(ref, name)
	if !ok {
		return "", 0, false, nil
	}
	svc := &corev1.Service{}
	key := client.ObjectKey{Namespace: ref.Namespace, Name: publishedServiceName(spec.Component, pub.Port)}
	if err := r.client.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", 0, false, nil
		}
		return "", 0, false, fmt.Errorf("get published Service %s: %w", key, err)
	}
	if !ownedBy(svc, ref) {
		return "", 0, false, fmt.Errorf("published Service %s: %s: %w", key, describeOwner("Service", svc), runtime.ErrNotOwner)
	}
	if len(svc.Spec.Ports) == 0 {
		return "", 0, false, nil
	}
	switch pub.Type {
	case runtime.NodePort:
		np := int(svc.Spec.Ports[0].NodePort)
		return pub.Address, np, np != 0, nil
	default:
		return pub.Address, int(svc.Spec.Ports[0].Port), len(svc.Status.LoadBalancer.Ingress) > 0, nil
	}
}

// publishedSpec finds the applied spec that publishes name.
func (r *Runtime) publishedSpec(ref runtime.ControlPlaneRef, name string) (runtime.Spec, runtime.Publish, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.applied[ref] {
		for _, s := range w.containers() {
			for _, p := range s.Publish {
				if p.Name == name {
					return s, p, true
				}
			}
		}
	}
	return runtime.Spec{}, runtime.Publish{}, false
}

// Watch calls notify with the control plane of every Pod, StatefulSet,
// Deployment and Service of the runtime that changes, so its controller
// reconciles (and reads Status) when a pod starts, becomes ready or
// crashes, and reads Published when a load balancer gets its address.
func (r *Runtime) Watch(mgr ctrl.Manager, notify func(runtime.ControlPlaneRef)) error {
	handle := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		l := m.GetLabels()
		if l[ManagedByLabel] != ManagedBy || l[ControlPlaneLabel] == "" {
			return
		}
		notify(runtime.ControlPlaneRef{Namespace: m.GetNamespace(), Name: l[ControlPlaneLabel], Owner: l[OwnerUIDLabel]})
	}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
		DeleteFunc: handle,
	}
	for _, obj := range []client.Object{&corev1.Pod{}, &appsv1.StatefulSet{}, &appsv1.Deployment{}, &corev1.Service{}} {
		informer, err := mgr.GetCache().GetInformer(context.Background(), obj)
		if err != nil {
			return fmt.Errorf("watch %T: %w", obj, err)
		}
		if _, err := informer.AddEventHandler(handler); err != nil {
			return fmt.Errorf("watch %T: %w", obj, err)
		}
	}
	return nil
}
