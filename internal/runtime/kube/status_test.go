package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/scheme"
	"hypershift.dev/internal/testenv"
)

// writePod creates a pod of the control plane as a workload controller
// would, and gives it status as a kubelet would.
func writePod(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef, owner, component, name string, containers []string, status corev1.PodStatus) {
	t.Helper()
	labels := objectLabels(ref, component)
	labels[OwnerUIDLabel] = owner
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ref.Namespace, Labels: labels}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "hypershift.dev/hypershift:test"})
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = status
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

func running(name string, ready bool, started time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, Ready: ready, Image: "hypershift.dev/hypershift:test", ImageID: "sha256:1",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
	}
}

func testStatus(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	rt := New(env.Client, testOptions())
	if err := rt.Apply(t.Context(), ref, clusterSpecs(ref, 3, 2)); err != nil {
		t.Fatal(err)
	}
	// The service account admission wants the default account, which no
	// controller makes here.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ref.Namespace}}
	if err := env.Client.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	started := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	writePod(t, env, ref, ref.Owner, "etcd", "etcd-0", []string{"etcd"}, corev1.PodStatus{
		Phase:             corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{running("etcd", true, started)},
	})
	writePod(t, env, ref, ref.Owner, "etcd", "etcd-1", []string{"etcd"}, corev1.PodStatus{
		Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "etcd", Image: "hypershift.dev/hypershift:test", ImageID: "sha256:1", RestartCount: 4,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "CrashLoopBackOff", Message: "back-off 1m20s restarting failed container",
			}},
			// Its last log lines (FallbackToLogsOnError): only the last
			// five are reported.
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 1,
				Message: "line 1\nline 2\nline 3\nline 4\nline 5\n" +
					`{"level":"fatal","msg":"failed to open backend","error":"open /var/lib/hypershift/etcd/data/member/snap/db: permission denied"}` + "\n",
			}},
		}},
	})
	// Deployment pods are given the instance names in name order.
	writePod(t, env, ref, ref.Owner, "kube-apiserver", "kube-apiserver-7c9d-b", []string{"kube-apiserver", "konnectivity-server"}, corev1.PodStatus{
		Phase:      corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}},
	})
	writePod(t, env, ref, ref.Owner, "kube-apiserver", "kube-apiserver-7c9d-a", []string{"kube-apiserver", "konnectivity-server"}, corev1.PodStatus{
		Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{
			running("kube-apiserver", true, started), running("konnectivity-server", false, started),
		},
	})
	// Its pod runs another release: the API server's instance reports it.
	apiPod := &corev1.Pod{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: "kube-apiserver-7c9d-a"}, apiPod); err != nil {
		t.Fatal(err)
	}
	apiPod.Annotations = map[string]string{KubernetesVersionAnnotation: "v1.36.3"}
	if err := env.Client.Update(t.Context(), apiPod); err != nil {
		t.Fatal(err)
	}
	// Another owner's pod is none of this control plane's instances.
	writePod(t, env, ref, "another-owner", "kube-scheduler", "kube-scheduler-7c9d-a", []string{"kube-scheduler"}, corev1.PodStatus{
		Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("kube-scheduler", true, started)},
	})

	got := map[string]runtime.InstanceStatus{}
	var order []string
	for _, st := range rt.Status(ref) {
		got[st.Name] = st
		order = append(order, st.Name)
	}
	want := map[string]runtime.Phase{
		"etcd-0": runtime.Running, "etcd-1": runtime.BackOff, "etcd-2": runtime.Stopped,
		"kube-apiserver-0": runtime.Running, "konnectivity-server-0": runtime.Starting,
		"kube-apiserver-1": runtime.Starting, "konnectivity-server-1": runtime.Starting,
		"kube-controller-manager-0": runtime.Stopped, "kube-controller-manager-1": runtime.Stopped,
		"kube-scheduler-0": runtime.Stopped, "kube-scheduler-1": runtime.Stopped,
	}
	if len(got) != len(want) {
		t.Errorf("Status reports %v, want one status per instance: %d", order, len(want))
	}
	for name, phase := range want {
		if got[name].Phase != phase {
			t.Errorf("%s is %q (%s), want %s", name, got[name].Phase, got[name].Message, phase)
		}
	}
	if e := got["etcd-0"]; !e.StartedAt.Equal(started) || e.Component != "etcd" || e.Message != "pod etcd-0" {
		t.Errorf("etcd-0: %+v, want started at %s in pod etcd-0", e, started)
	}
	if e := got["etcd-1"]; e.Restarts != 4 || e.LastExitReason != "Error (exit code 1)" {
		t.Errorf("etcd-1: restarts %d, last exit %q; want 4, Error (exit code 1)", e.Restarts, e.LastExitReason)
	}
	if e := got["etcd-1"]; !strings.HasSuffix(e.Message, ": line 2\nline 3\nline 4\nline 5\nfatal: failed to open backend: open /var/lib/hypershift/etcd/data/member/snap/db: permission denied") {
		t.Errorf("etcd-1's message %q does not end with its last five log lines (the JSON one told as level, message and error)", e.Message)
	}
	if k := got["kube-apiserver-0"]; k.Message != "pod kube-apiserver-7c9d-a" {
		t.Errorf("kube-apiserver-0 is in %q, want the first pod by name", k.Message)
	}
	for name, version := range map[string]string{"kube-apiserver-0": "v1.36.3", "konnectivity-server-0": "", "kube-apiserver-1": "", "etcd-0": ""} {
		if got[name].Version != version {
			t.Errorf("%s reports version %q, want %q (the pod's %s)", name, got[name].Version, version, KubernetesVersionAnnotation)
		}
	}
	if k := got["konnectivity-server-1"]; k.Component != "konnectivity-server" || k.Message != "pod kube-apiserver-7c9d-b: not scheduled: Unschedulable 0/3 nodes are available" {
		t.Errorf("konnectivity-server-1: %+v", k)
	}
	for i := 1; i < len(order); i++ {
		if order[i-1] > order[i] {
			t.Errorf("Status is not sorted by name: %v", order)
		}
	}
	// The pods the test wrote stay (no kubelet): Delete says they are
	// still stopping; what it ran is forgotten all the same.
	if err := rt.Delete(t.Context(), ref); err != nil && !errors.Is(err, runtime.ErrStopping) {
		t.Fatal(err)
	}
	if st := rt.Status(ref); len(st) != 0 {
		t.Errorf("Status after Delete: %v", st)
	}
}

// testWatch: a change to a pod of the control plane notifies its ref, read
// from the pod's labels; pods of others do not.
func testWatch(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	mgr := newManager(t, env, cache.Options{})
	rt := New(mgr.GetClient(), testOptions())
	notified := make(chan runtime.ControlPlaneRef, 100)
	if err := rt.Watch(mgr, func(r runtime.ControlPlaneRef) { notified <- r }); err != nil {
		t.Fatal(err)
	}
	startManager(t, mgr)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ref.Namespace}}
	if err := env.Client.Create(t.Context(), sa); err != nil {
		t.Fatal(err)
	}
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unmanaged", Namespace: ref.Namespace, Labels: map[string]string{ControlPlaneLabel: "other"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "other:1"}}},
	}
	if err := env.Client.Create(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	writePod(t, env, ref, ref.Owner, "etcd", "etcd-0", []string{"etcd"}, corev1.PodStatus{Phase: corev1.PodPending})
	// The informers start with the objects of earlier tests; the pod's
	// own notification follows.
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-notified:
			if got.Name != ref.Name {
				t.Errorf("notified %+v: not a control plane of the runtime", got)
			}
			if got.Namespace != ref.Namespace {
				continue
			}
			if got != ref {
				t.Errorf("notified %+v, want %+v", got, ref)
			}
			return
		case <-timeout:
			t.Fatal("no notification for a pod of the control plane")
		}
	}
}

func newManager(t *testing.T, env *testenv.Env, cacheOpts cache.Options) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(env.RESTConfig, ctrl.Options{
		Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cacheOpts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// startManager runs mgr until the test ends.
func startManager(t *testing.T, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the manager's cache did not sync")
	}
}
