package kube

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// testMachines: a machine is a privileged pod in the namespace of its
// control plane's machines, with its userdata in a Secret; its state comes
// from the pod; another owner's pod or namespace of the name is never
// touched; deleting the owner's machine deletes its pod, then its Secret
// and, with the last machine, the namespace.
func testMachines(t *testing.T, env *testenv.Env, cp runtime.ControlPlaneRef) {
	ctx, c := t.Context(), env.Client
	if err := NewMachines(c, MachinesOptions{}).Check(ctx); err == nil || !strings.Contains(err.Error(), "--machine-image") {
		t.Errorf("Check without an image: %v, want an error naming --machine-image", err)
	}
	m := NewMachines(c, MachinesOptions{Image: "hypershift.dev/hypershift-machine:test"})
	ref := runtime.MachineRef{Namespace: cp.Namespace, Cluster: "cluster-uid", Name: "m1", Owner: "owner-1", ProviderID: "hypershift-host://m1"}
	ns := MachinesNamespace(cp.Namespace)

	got, err := m.Create(ctx, ref, []byte("#!/bin/sh\nexit 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.State != runtime.MachineStarting || got.Owner != ref.Owner {
		t.Errorf("Create: %+v, want Starting of %s", got, ref.Owner)
	}
	namespace := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, namespace); err != nil {
		t.Fatal(err)
	}
	if namespace.Labels[OwnerUIDLabel] != ref.Cluster || namespace.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace %s labels %v, want the cluster's UID and Pod Security privileged", ns, namespace.Labels)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1-userdata"}, secret); err != nil {
		t.Fatal(err)
	}
	if string(secret.Data[userdataKey]) != "#!/bin/sh\nexit 0\n" || secret.Labels[OwnerUIDLabel] != ref.Owner {
		t.Errorf("userdata Secret: %v %q", secret.Labels, secret.Data[userdataKey])
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, pod); err != nil {
		t.Fatal(err)
	}
	ctr := pod.Spec.Containers[0]
	if ctr.Image != "hypershift.dev/hypershift-machine:test" || ctr.SecurityContext == nil || !*ctr.SecurityContext.Privileged ||
		pod.Spec.Hostname != "m1" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Labels[OwnerUIDLabel] != ref.Owner {
		t.Errorf("machine pod: %+v", pod.Spec)
	}
	if env := envOf(ctr); env["HYPERSHIFT_PROVIDER_ID"] != ref.ProviderID {
		t.Errorf("machine pod's environment %v, want the provider ID", env)
	}

	if _, err := m.Create(ctx, ref, []byte("again")); err != nil {
		t.Errorf("Create of the owner's existing machine: %v", err)
	}
	other := ref
	other.Owner = "owner-2"
	if _, err := m.Create(ctx, other, []byte("x")); !errors.Is(err, runtime.ErrMachineExists) {
		t.Errorf("Create by another owner: %v, want ErrMachineExists", err)
	}
	if done, err := m.Delete(ctx, other); err != nil || !done {
		t.Errorf("Delete by another owner: %v %v, want done with nothing deleted", done, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1"}, pod); err != nil {
		t.Fatalf("the pod after another owner's Delete: %v", err)
	}

	// The state comes from the pod.
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   runtime.MachineState
		msg    string
	}{
		{
			"image missing",
			corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "machine", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: "not present"}}},
			}},
			runtime.MachineStarting, "ErrImageNeverPull",
		},
		{"running its userdata", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", ContainerStatuses: []corev1.ContainerStatus{
			{Name: "machine", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}, runtime.MachineRunning, ""},
		{"booted", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3", ContainerStatuses: []corev1.ContainerStatus{
			{Name: "machine", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}, runtime.MachineBooted, ""},
		{
			"userdata failed",
			corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "machine", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "Error: cannot join"}}},
			}},
			runtime.MachineFailed, "cannot join",
		},
	} {
		pod.Status = tc.status
		if err := c.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
		got, err := m.Get(ctx, ref)
		if err != nil || got.State != tc.want || !strings.Contains(got.Message, tc.msg) {
			t.Errorf("%s: Get = %+v, %v; want %s with %q", tc.name, got, err, tc.want, tc.msg)
		}
		if tc.status.PodIP != "" && got.Address.String() != tc.status.PodIP {
			t.Errorf("%s: address %s, want the pod's %s", tc.name, got.Address, tc.status.PodIP)
		}
	}
	if n, err := m.Count(ctx); err != nil || n != 1 {
		t.Errorf("Count = %d, %v; want 1", n, err)
	}

	// A namespace of the name that is not this cluster's machines' is
	// not used.
	foreignCP := runtime.MachineRef{Namespace: cp.Namespace + "-x", Cluster: "cluster-uid", Name: "m1", Owner: "owner-1"}
	foreignNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MachinesNamespace(foreignCP.Namespace)}}
	if err := c.Create(ctx, foreignNS); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, foreignCP, []byte("x")); !errors.Is(err, runtime.ErrMachineExists) {
		t.Errorf("Create in a namespace that is not the cluster's: %v, want ErrMachineExists", err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(foreignNS.Name)); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods made in a foreign namespace: %d, %v", len(pods.Items), err)
	}

	// A namespace that holds a claim (a guest volume's, the volume
	// mirror's) outlives its last machine: it goes with the cluster.
	withClaim := runtime.MachineRef{Namespace: cp.Namespace + "-v", Cluster: "cluster-uid", Name: "m1", Owner: "owner-1"}
	if _, err := m.Create(ctx, withClaim, []byte("x")); err != nil {
		t.Fatal(err)
	}
	claimNS := MachinesNamespace(withClaim.Namespace)
	if err := c.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: claimNS, Name: "vol-1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := m.Delete(ctx, withClaim); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: claimNS}, namespace); err != nil || namespace.DeletionTimestamp != nil {
		t.Errorf("namespace %s with a claim in it after its last machine went: %v, deleting %v; want it kept", claimNS, err, namespace.DeletionTimestamp)
	}

	// Deleting: the pod first (its first process resets the node), then
	// the Secret and the namespace.
	if done, err := m.Delete(ctx, ref); err != nil || done {
		t.Fatalf("first Delete: done %v, %v; want the pod deleted and not done", done, err)
	}
	if done, err := m.Delete(ctx, ref); err != nil || !done {
		t.Fatalf("second Delete: done %v, %v; want done", done, err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "m1-userdata"}, secret); !apierrors.IsNotFound(err) {
		t.Errorf("the userdata Secret after Delete: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, namespace); err == nil && namespace.DeletionTimestamp == nil {
		t.Errorf("namespace %s is not deleted with its last machine", ns)
	}
	if _, err := m.Get(ctx, ref); !errors.Is(err, runtime.ErrMachineNotFound) {
		t.Errorf("Get after Delete: %v, want ErrMachineNotFound", err)
	}
}

func envOf(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func TestMachinesNamespace(t *testing.T) {
	if got := MachinesNamespace("clusters-dev"); got != "clusters-dev-machines" {
		t.Errorf("MachinesNamespace(clusters-dev) = %s", got)
	}
	long := strings.Repeat("a", 60)
	got := MachinesNamespace(long)
	if len(got) > 63 || !strings.HasSuffix(got, "-machines") || got == MachinesNamespace(strings.Repeat("a", 59)+"b") {
		t.Errorf("MachinesNamespace of a long name: %s (%d)", got, len(got))
	}
}

// TestMachineHotplugDir: with the management nodes' kubelet directory, a
// machine pod has its hot-plug directory there at MachineHotplugDir with
// host-to-container propagation, where attachment pods hold its volumes;
// without it, none.
func TestMachineHotplugDir(t *testing.T) {
	ref := runtime.MachineRef{Namespace: "clusters-a", Cluster: "cluster-uid", Name: "m1", Owner: "owner-1"}
	pod := NewMachines(nil, MachinesOptions{Image: "i", KubeletDir: "/var/lib/kubelet"}).machinePod("clusters-a-machines", ref)
	var path string
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			path = v.HostPath.Path
		}
	}
	if path != "/var/lib/kubelet/plugins/hotplug.hypershift.dev/clusters-a-machines/m1" {
		t.Errorf("host path %q", path)
	}
	var mounted bool
	for _, m := range pod.Spec.Containers[0].VolumeMounts {
		if m.Name == "hotplug" {
			mounted = m.MountPath == MachineHotplugDir && m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationHostToContainer
		}
	}
	if !mounted {
		t.Errorf("mounts %+v, want the hot-plug directory at %s, HostToContainer", pod.Spec.Containers[0].VolumeMounts, MachineHotplugDir)
	}
	if env := envOf(pod.Spec.Containers[0]); env["HYPERSHIFT_VOLUMES_DIR"] != MachineHotplugDir {
		t.Errorf("environment %v, want HYPERSHIFT_VOLUMES_DIR=%s for join", env, MachineHotplugDir)
	}
	pod = NewMachines(nil, MachinesOptions{Image: "i"}).machinePod("clusters-a-machines", ref)
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("a host path %s without the kubelet directory", v.HostPath.Path)
		}
	}
}
