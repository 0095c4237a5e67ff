package kube

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/golden"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

const testArchiveURL = "s3://backups/a.bak?region=us-east-1&use_path_style=true&disable_https=true&endpoint=http%3A%2F%2F10.88.0.1%3A9000"

func withRestore(specs []runtime.Spec, rs *runtime.Restore) []runtime.Spec {
	out := slices.Clone(specs)
	for i := range out {
		if out[i].Component == components.Etcd {
			out[i].Restore = rs
		}
	}
	return out
}

func restoreFiles() []runtime.File {
	return []runtime.File{
		{Path: runtime.RestoreURLFile, Content: []byte(testArchiveURL), Secret: true},
		{Path: "key", Content: []byte("0123456789abcdef0123456789abcdef"), Secret: true},
		{Path: "AWS_ACCESS_KEY_ID", Content: []byte("id"), Secret: true},
		{Path: "AWS_SECRET_ACCESS_KEY", Content: []byte("secret"), Secret: true},
	}
}

func findObject[T client.Object](objs []client.Object, name string) (T, int) {
	var zero T
	for i, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			return t, i
		}
	}
	return zero, -1
}

// TestObjectsRestore: etcd of a control plane being restored gets the
// restore Secret (before its StatefulSet, which its first pods need) and
// an init container running `hypershift restore etcd-data` with etcd's own
// arguments, which alone mounts the Secret; its egress reaches the
// bucket's port. Once the restore is done (no files) the Secret is gone
// and the pod template is unchanged: the pods do not roll.
func TestObjectsRestore(t *testing.T) {
	base := renderedSpecs(t, testRef, components.SingleReplica, 30443)
	restoring, err := Objects(testRef, withRestore(base, &runtime.Restore{Files: restoreFiles()}), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "single-replica-restore.yaml"), renderYAML(t, restoring))

	secret, si := findObject[*corev1.Secret](restoring, "etcd-restore")
	sts, wi := findObject[*appsv1.StatefulSet](restoring, "etcd")
	if si < 0 || wi < 0 || si > wi {
		t.Fatalf("restore Secret at %d, StatefulSet at %d: want the Secret first", si, wi)
	}
	if string(secret.Data["url"]) != testArchiveURL || len(secret.Data["key"]) != 32 || string(secret.Data["AWS_ACCESS_KEY_ID"]) != "id" {
		t.Errorf("restore Secret data: %v", secret.Data)
	}
	pod := sts.Spec.Template.Spec
	if len(pod.InitContainers) != 1 || pod.InitContainers[0].Name != RestoreContainerName {
		t.Fatalf("init containers %+v, want %s", pod.InitContainers, RestoreContainerName)
	}
	initc := pod.InitContainers[0]
	etcd := pod.Containers[0]
	if want := append(slices.Clone(RestoreCommand), etcd.Args...); !reflect.DeepEqual(initc.Command, want) {
		t.Errorf("init container command %q, want %q", initc.Command, want)
	}
	mounts := map[string]string{}
	for _, m := range initc.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	if mounts[dataVolume] != "/var/lib/hypershift/etcd/data" || mounts[restoreVolume] != restoreDir {
		t.Errorf("init container mounts %v: want the data volume at etcd's data dir and the restore Secret", mounts)
	}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == restoreVolume {
				t.Errorf("container %s mounts the restore Secret; only the init container may", c.Name)
			}
		}
	}
	var vol *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == restoreVolume {
			vol = &pod.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "etcd-restore" || vol.Secret.Optional == nil || !*vol.Secret.Optional {
		t.Errorf("restore volume %+v: want the optional Secret etcd-restore", vol)
	}
	policy, _ := findObject[*networkingv1.NetworkPolicy](restoring, "etcd")
	if !egressAllows(policy, 9000) {
		t.Errorf("etcd's policy does not let the restore reach the bucket's port 9000: %+v", policy.Spec.Egress)
	}

	done, err := Objects(testRef, withRestore(base, &runtime.Restore{}), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, i := findObject[*corev1.Secret](done, "etcd-restore"); i >= 0 {
		t.Error("the restore Secret is still rendered once the restore is done")
	}
	doneSts, _ := findObject[*appsv1.StatefulSet](done, "etcd")
	if !reflect.DeepEqual(doneSts.Spec.Template, sts.Spec.Template) {
		t.Error("the pod template changed when the restore was done: the members would restart")
	}
	donePolicy, _ := findObject[*networkingv1.NetworkPolicy](done, "etcd")
	if egressAllows(donePolicy, 9000) {
		t.Error("the bucket's port stays open after the restore")
	}

	plain, err := Objects(testRef, base, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	plainSts, _ := findObject[*appsv1.StatefulSet](plain, "etcd")
	if len(plainSts.Spec.Template.Spec.InitContainers) != 0 {
		t.Error("a control plane not restored has an init container")
	}

	bad := withRestore(base, nil)
	for i := range bad {
		if bad[i].Component == components.KubeAPIServer {
			bad[i].Restore = &runtime.Restore{}
		}
	}
	if _, err := Objects(testRef, bad, testOptions()); err == nil || !strings.Contains(err.Error(), "spec.Restore") {
		t.Errorf("a Restore on an instance without Data: %v, want an error naming spec.Restore", err)
	}
}

func egressAllows(p *networkingv1.NetworkPolicy, port int) bool {
	for _, rule := range p.Spec.Egress {
		for _, pp := range rule.Ports {
			if pp.Port != nil && pp.Port.IntValue() == port {
				return true
			}
		}
	}
	return false
}

// testPinnedNodePort: a node port pinned before the control plane has
// any is what its published Service gets; once it has one, pinning
// reports false; a node port another Service holds is refused, naming it.
func testPinnedNodePort(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	rt := New(env.Client, testOptions())
	// Ports no Service holds now: the other subtests' Services get node
	// ports the API server picks at random.
	free := unusedNodePorts(t, env, 2)
	pinned, held := free[0], free[1]
	ok, err := rt.PinPorts(ref, map[string]int{components.EndpointPort: pinned})
	if err != nil || !ok {
		t.Fatalf("PinPorts = %v, %v; want true", ok, err)
	}
	specs := clusterSpecs(ref, 1, 1)
	for i := range specs {
		for j := range specs[i].Publish {
			specs[i].Publish[j].NodePort = 0
		}
	}
	if err := rt.Apply(t.Context(), ref, specs); err != nil {
		t.Fatal(err)
	}
	if _, port, ok, err := rt.Published(t.Context(), ref, components.EndpointPort); err != nil || !ok || port != pinned {
		t.Errorf("Published(endpoint) = %d, %v, %v; want the pinned node port %d", port, ok, err, pinned)
	}
	if _, port, _, _ := rt.Published(t.Context(), ref, "konnectivity"); port == pinned || port == 0 {
		t.Errorf("Published(konnectivity) = %d: want a node port of its own", port)
	}
	if ok, err := rt.PinPorts(ref, map[string]int{components.EndpointPort: 31778}); ok || err != nil {
		t.Errorf("PinPorts once the control plane has ports = %v, %v; want false", ok, err)
	}
	other := ref
	other.Namespace, other.Name = "default", "other"
	_, err = rt.PinPorts(other, map[string]int{components.EndpointPort: pinned})
	if err == nil || !strings.Contains(err.Error(), ref.Namespace+"/kube-apiserver-https-published") {
		t.Errorf("PinPorts of a node port in use: %v, want an error naming the Service that holds it", err)
	}
	// A pin whose control plane has no Service yet holds its port too.
	if ok, err := rt.PinPorts(other, map[string]int{components.EndpointPort: held}); err != nil || !ok {
		t.Fatalf("PinPorts(%s) = %v, %v; want true", other.Namespace, ok, err)
	}
	third := runtime.ControlPlaneRef{Namespace: "kube-public", Name: "third"}
	_, err = rt.PinPorts(third, map[string]int{components.EndpointPort: held})
	if err == nil || !strings.Contains(err.Error(), "pinned by namespace "+other.Namespace) {
		t.Errorf("PinPorts of a node port another namespace pinned: %v, want an error naming that namespace", err)
	}
}

// unusedNodePorts returns n node ports that no Service of env holds.
func unusedNodePorts(t *testing.T, env *testenv.Env, n int) []int {
	t.Helper()
	services := &corev1.ServiceList{}
	if err := env.Client.List(t.Context(), services); err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, svc := range services.Items {
		for _, p := range svc.Spec.Ports {
			used[int(p.NodePort)] = true
		}
	}
	var out []int
	for port := 31777; len(out) < n && port <= maxNodePort; port++ {
		if !used[port] {
			out = append(out, port)
		}
	}
	if len(out) < n {
		t.Fatalf("fewer than %d free node ports", n)
	}
	return out
}

// TestStatusOfAFailingRestore: an etcd pod whose restore init container
// keeps failing is BackOff with the container's last words, not Starting
// forever; once it succeeded, etcd's own container decides.
func TestStatusOfAFailingRestore(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Name = "etcd-0"
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{
		Name: RestoreContainerName, RestartCount: 2,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Message: "archive s3://backups/a.bak: wrong key or altered archive\n",
		}},
	}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "etcd", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}},
	}}
	st := instanceStatus("etcd-0", components.Etcd, pod, nil)
	if st.Phase != runtime.BackOff || !strings.Contains(st.Message, "init container restore-data failed 3 times") ||
		!strings.Contains(st.Message, "wrong key or altered archive") {
		t.Errorf("failing restore: %s %q, want BackOff with the init container's error", st.Phase, st.Message)
	}

	pod.Status.InitContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	pod.Status.ContainerStatuses[0] = running("etcd", true, time.Now())
	if st := instanceStatus("etcd-0", components.Etcd, pod, nil); st.Phase != runtime.Running {
		t.Errorf("after a restore that succeeded in the end: %s %q, want Running", st.Phase, st.Message)
	}
}
