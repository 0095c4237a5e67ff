package volumemirror

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/hostedref"
	kuberuntime "hypershift.dev/internal/runtime/kube"
)

const (
	attachImage = "hypershift.dev/hypershift-machine:test"
	kubeletDir  = "/var/lib/kubelet"
	mgmtNode    = "mgmt-0"
)

// machinePod makes a pod in the machines' namespace as the kube runtime
// makes a machine's (labelled as one when machine, with its hot-plug
// directory when hotplug), on mgmtNode.
func (f *fixture) machinePod(t *testing.T, name string, machine, hotplug bool) {
	t.Helper()
	labels := map[string]string{kuberuntime.ManagedByLabel: kuberuntime.ManagedBy}
	if machine {
		labels[kuberuntime.MachineLabel] = name
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: infraNamespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:   mgmtNode,
			Containers: []corev1.Container{{Name: "machine", Image: attachImage}},
		},
	}
	if hotplug {
		pod.Spec.Volumes = []corev1.Volume{{Name: "hotplug", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: kuberuntime.HotplugDir(kubeletDir, infraNamespace, name),
		}}}}
	}
	must(t, f.c.Create(t.Context(), pod))
}

// attachment makes the guest VolumeAttachment the guest's attach/detach
// controller makes for volume pv on node.
func (f *fixture) attachment(t *testing.T, name, pv, node string) *storagev1.VolumeAttachment {
	t.Helper()
	va, err := f.kube.StorageV1().VolumeAttachments().Create(t.Context(), &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: Driver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv},
		},
	}, metav1.CreateOptions{})
	must(t, err)
	return va
}

func (f *fixture) getAttachment(t *testing.T, name string) *storagev1.VolumeAttachment {
	t.Helper()
	va, err := f.kube.StorageV1().VolumeAttachments().Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	return va
}

// attachmentPods are the pods of the machines' namespace that hold a
// volume, by name.
func (f *fixture) attachmentPods(t *testing.T) map[string]*corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	must(t, f.c.List(t.Context(), list, client.InNamespace(infraNamespace), client.HasLabels{AttachmentUIDLabel}))
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

// TestVolumeAttach: a guest VolumeAttachment of the driver for a mirrored
// volume on a machine becomes an attachment pod beside the claim, on the
// machine pod's management node, holding the claim in the machine's
// hot-plug directory; it is reported attached once the pod is Ready, and
// deleting it deletes the pod before its finalizer goes. What the guest
// writes in a VolumeAttachment (volume, node) is refused when it is not
// this cluster's volume or machine, and nothing is made for it. A pod
// that holds a volume for no VolumeAttachment goes; another cluster's
// stays.
func TestVolumeAttach(t *testing.T) {
	f := setUp(t)
	ctx := t.Context()
	g := f.claim(t, "data", mappedClass, "1Gi")
	f.pass(t)
	handle := infraName(string(g.UID))
	pv := volumeName(string(g.UID))
	if f.infra(t, handle) == nil || f.volume(t, pv) == nil {
		t.Fatal("the claim was not provisioned")
	}
	// An operator that attaches nothing says so where the pod's events
	// show it, and makes nothing.
	early := f.attachment(t, "csi-early", pv, "m1")
	f.pass(t)
	if got := f.getAttachment(t, early.Name); got.Status.AttachError == nil || got.Status.AttachError.Message != NoAttachMessage || hasFinalizer(got, AttachFinalizer) {
		t.Fatalf("without Attach: status %+v, finalizers %v; want the attach error %q and no finalizer", got.Status, got.Finalizers, NoAttachMessage)
	}
	must(t, f.kube.StorageV1().VolumeAttachments().Delete(ctx, early.Name, metav1.DeleteOptions{}))
	f.r.Attach = &Attach{Image: attachImage, KubeletDir: kubeletDir}
	// What the management cluster's controller manager would make.
	must(t, f.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: infraNamespace, Name: "default"}}))
	f.machinePod(t, "m1", true, true)
	f.machinePod(t, "etcd-0", false, false) // in the namespace, not a machine
	f.machinePod(t, "m-old", true, false)   // made before --kubelet-dir

	va := f.attachment(t, "csi-a", pv, "m1")
	f.pass(t)
	va = f.getAttachment(t, va.Name)
	if !hasFinalizer(va, AttachFinalizer) {
		t.Errorf("finalizers %v, want %s", va.Finalizers, AttachFinalizer)
	}
	if va.Status.Attached {
		t.Error("attached before the attachment pod is Ready")
	}
	pods := f.attachmentPods(t)
	pod := pods[attachmentPodName(handle, "m1")]
	if len(pods) != 1 || pod == nil {
		t.Fatalf("attachment pods %v, want one for %s on m1", keys(pods), handle)
	}
	checkAttachmentPod(t, f, pod, va, handle)

	// The scheduler cannot place it: the guest sees why.
	const unschedulable = "0/1 nodes are available: 1 node(s) had volume node affinity conflict"
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: unschedulable}}
	must(t, f.c.Status().Update(ctx, pod))
	f.pass(t)
	if va = f.getAttachment(t, va.Name); va.Status.Attached || va.Status.AttachError == nil || !strings.Contains(va.Status.AttachError.Message, unschedulable) {
		t.Fatalf("status %+v of an unschedulable attachment pod, want its message", va.Status)
	}

	// The kubelet reports the pod Ready: its process holds the volume.
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	must(t, f.c.Status().Update(ctx, pod))
	f.pass(t)
	if va = f.getAttachment(t, va.Name); !va.Status.Attached || va.Status.AttachError != nil {
		t.Fatalf("status %+v after the pod is Ready, want attached", va.Status)
	}

	// Refused, nothing made: a node that is no machine, an unknown node,
	// a volume of another driver, a handle that names a claim not of
	// this cluster.
	_, err := f.kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "forged"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: f.infra(t, handle).Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: Driver, VolumeHandle: "data-etcd-0",
			}},
		},
	}, metav1.CreateOptions{})
	must(t, err)
	refused := map[string]string{
		f.attachment(t, "csi-old-machine", pv, "m-old").Name:       "machine m-old was made without the hot-plug directory",
		f.attachment(t, "csi-second", pv, "m1").Name:               "is attached to m1 for another VolumeAttachment",
		f.attachment(t, "csi-node-not-machine", pv, "etcd-0").Name: `node "etcd-0" is not a machine of this cluster`,
		f.attachment(t, "csi-node-unknown", pv, "nowhere").Name:    `node "nowhere" is not a machine of this cluster`,
		f.attachment(t, "csi-other-volume", "local-1", "m1").Name:  "PersistentVolume local-1 is not a volume of " + Driver,
		f.attachment(t, "csi-forged-handle", "forged", "m1").Name:  `volume handle "data-etcd-0" names no volume of this cluster`,
	}
	f.pass(t)
	for name, want := range refused {
		got := f.getAttachment(t, name)
		if got.Status.Attached || got.Status.AttachError == nil || !strings.Contains(got.Status.AttachError.Message, want) {
			t.Errorf("%s: status %+v, want not attached with error %q", name, got.Status, want)
		}
	}
	if pods := f.attachmentPods(t); len(pods) != 1 {
		t.Errorf("attachment pods %v after refused attachments, want only the first", keys(pods))
	}
	// Gone, they take nothing with them (the second would take the pod
	// over once the first let go of it).
	for name := range refused {
		must(t, f.kube.StorageV1().VolumeAttachments().Delete(ctx, name, metav1.DeleteOptions{}))
	}
	f.pass(t)
	for name := range refused {
		if got := f.getAttachment(t, name); got != nil {
			t.Errorf("refused VolumeAttachment %s still there once deleted (finalizers %v)", name, got.Finalizers)
		}
	}

	// A pod of this cluster for no VolumeAttachment goes; another
	// cluster's stays.
	stray, foreign := pod.DeepCopy(), pod.DeepCopy()
	for _, p := range []*corev1.Pod{stray, foreign} {
		p.ResourceVersion, p.UID, p.Status = "", "", corev1.PodStatus{}
	}
	stray.Name, stray.Labels[AttachmentUIDLabel] = "attach-stray", "00000000-0000-0000-0000-000000000001"
	foreign.Name, foreign.Labels[AttachmentUIDLabel] = "attach-foreign", "00000000-0000-0000-0000-000000000002"
	foreign.Labels[hostedref.OwnerUIDLabel] = "another-cluster"
	must(t, f.c.Create(ctx, stray))
	must(t, f.c.Create(ctx, foreign))
	f.pass(t)
	pods = f.attachmentPods(t)
	if pods["attach-stray"] != nil || pods["attach-foreign"] == nil || pods[pod.Name] == nil {
		t.Errorf("attachment pods %v, want the stray one gone and the other cluster's and the attached one kept", keys(pods))
	}

	// At most MaxAttachmentPods: a second machine's attachment waits.
	f.machinePod(t, "m2", true, true)
	f.r.Limits.MaxAttachmentPods = 1
	capped := f.attachment(t, "csi-m2", pv, "m2")
	f.pass(t)
	if got := f.getAttachment(t, capped.Name); got.Status.AttachError == nil || !strings.Contains(got.Status.AttachError.Message, "the most it may have") {
		t.Errorf("over the attachment pods' bound: status %+v", got.Status)
	}
	f.r.Limits.MaxAttachmentPods = DefaultLimits.MaxAttachmentPods
	must(t, f.kube.StorageV1().VolumeAttachments().Delete(ctx, capped.Name, metav1.DeleteOptions{}))

	// An attachment pod that ended (evicted) is reported detached, and
	// made again.
	ended := f.attachmentPods(t)[pod.Name]
	ended.Status.Phase, ended.Status.Reason = corev1.PodFailed, "Evicted"
	must(t, f.c.Status().Update(ctx, ended))
	f.pass(t)
	if got := f.getAttachment(t, va.Name); got.Status.Attached || got.Status.AttachError == nil || !strings.Contains(got.Status.AttachError.Message, "ended (Evicted)") {
		t.Errorf("an ended attachment pod: status %+v, want not attached, saying so", got.Status)
	}
	f.pass(t)
	if again := f.attachmentPods(t)[pod.Name]; again == nil || again.UID == ended.UID {
		t.Fatalf("the ended attachment pod was not made again: %v", again)
	}

	// Detach: the pod goes first, then the finalizer.
	must(t, f.kube.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}))
	f.pass(t)
	if pods := f.attachmentPods(t); pods[pod.Name] != nil && pods[pod.Name].DeletionTimestamp == nil {
		t.Fatal("the attachment pod was not deleted with its VolumeAttachment")
	}
	f.pass(t)
	if got := f.getAttachment(t, va.Name); got != nil {
		t.Errorf("VolumeAttachment still there (finalizers %v) once its pod is gone", got.Finalizers)
	}

	// An operator restarted without attaching still detaches what was
	// attached: the pod goes, then the finalizer.
	late := f.attachment(t, "csi-late", pv, "m1")
	f.pass(t)
	if f.attachmentPods(t)[pod.Name] == nil {
		t.Fatal("no attachment pod for csi-late")
	}
	f.r.Attach = nil
	must(t, f.kube.StorageV1().VolumeAttachments().Delete(ctx, late.Name, metav1.DeleteOptions{}))
	f.pass(t)
	f.pass(t)
	if got, pods := f.getAttachment(t, late.Name), f.attachmentPods(t); got != nil || pods[pod.Name] != nil {
		t.Errorf("without Attach, a deleted VolumeAttachment: %v, attachment pods %v; want both gone", got, keys(pods))
	}
}

func checkAttachmentPod(t *testing.T, f *fixture, pod *corev1.Pod, va *storagev1.VolumeAttachment, handle string) {
	t.Helper()
	if pod.Labels[hostedref.OwnerUIDLabel] != string(f.hc.UID) || pod.Labels[AttachmentUIDLabel] != string(va.UID) ||
		pod.Labels[AttachedToLabel] != "m1" || pod.Labels[kuberuntime.MachineLabel] != "" {
		t.Errorf("labels %v", pod.Labels)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if pod.Spec.NodeName != "" || len(terms) != 1 || len(terms[0].MatchFields) != 1 || terms[0].MatchFields[0].Values[0] != mgmtNode {
		t.Errorf("placement nodeName %q, affinity %+v: want an affinity to %s (the scheduler binds the claim)", pod.Spec.NodeName, terms, mgmtNode)
	}
	c := pod.Spec.Containers[0]
	if c.Image != attachImage || !ptr.Deref(c.SecurityContext.Privileged, false) ||
		strings.Join(c.Command, " ") != "/hypershift machine attach --hotplug-dir /hotplug --name "+handle+" --source /volume" {
		t.Errorf("container image %s, privileged %v, command %v", c.Image, c.SecurityContext.Privileged, c.Command)
	}
	var claim, hostPath string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.HostPath != nil:
			hostPath = v.HostPath.Path
		}
	}
	if want := kubeletDir + "/plugins/hotplug.hypershift.dev/" + infraNamespace + "/m1"; claim != handle || hostPath != want {
		t.Errorf("volumes: claim %q, host path %q; want %q and %q", claim, hostPath, handle, want)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "hotplug" && ptr.Deref(m.MountPropagation, "") != corev1.MountPropagationBidirectional {
			t.Errorf("hot-plug mount propagation %v, want Bidirectional", m.MountPropagation)
		}
	}
}

func keys(m map[string]*corev1.Pod) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
