package volumemirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/hostedref"
	kuberuntime "hypershift.dev/internal/runtime/kube"
)

const (
	// AttachFinalizer on a guest VolumeAttachment holds it until its
	// attachment pod is gone (the external attacher's finalizer, named as
	// it names it for this driver).
	AttachFinalizer = "external-attacher/csi-hypershift-dev"
	// AttachmentUIDLabel on an attachment pod is the UID of the guest
	// VolumeAttachment it holds the volume for.
	AttachmentUIDLabel = "hypershift.dev/volume-attachment-uid"
	// AttachedToLabel on an attachment pod names the machine (guest node)
	// it holds the volume in.
	AttachedToLabel = "hypershift.dev/attached-to"
	// AttachmentAnnotation on an attachment pod names its guest
	// VolumeAttachment.
	AttachmentAnnotation = "hypershift.dev/volume-attachment"
	// hotplugMount is where an attachment pod has its machine's hot-plug
	// directory, and volumeMount the claim.
	hotplugMount = "/hotplug"
	volumeMount  = "/volume"
)

// Attach configures the attaching half: guest VolumeAttachments of the
// driver become attachment pods beside the claims.
type Attach struct {
	// Image is the machine image: the attachment pod runs its hypershift
	// binary (`hypershift machine attach`).
	Image string
	// KubeletDir is the kubelet's root directory on the management
	// cluster's nodes (kuberuntime.HotplugDir).
	KubeletDir string
}

// guestAttachment is what the attacher needs of a guest VolumeAttachment
// of this driver.
type guestAttachment struct {
	va       storagev1.VolumeAttachment
	volume   string // spec.source.persistentVolumeName
	deleting bool
}

// scanAttachments reads the guest's VolumeAttachments and returns those
// of this driver.
func scanAttachments(ctx context.Context, kube kubernetes.Interface, l Limits, b *guestpass.Budget) ([]guestAttachment, error) {
	var out []guestAttachment
	err := guestpass.ListPages(ctx, kube.StorageV1().RESTClient(), "/apis/storage.k8s.io/v1/volumeattachments", nil, l.PageSize, b, func(raw json.RawMessage) error {
		var va storagev1.VolumeAttachment
		if err := json.Unmarshal(raw, &va); err != nil {
			return fmt.Errorf("a VolumeAttachment: %w", err)
		}
		if va.Spec.Attacher != Driver {
			return nil
		}
		if len(out) == l.MaxVolumes {
			return fmt.Errorf("more than %d VolumeAttachments of %s: %w", l.MaxVolumes, Driver, guestpass.ErrTruncated)
		}
		a := guestAttachment{va: va, deleting: va.DeletionTimestamp != nil}
		if va.Spec.Source.PersistentVolumeName != nil {
			a.volume = *va.Spec.Source.PersistentVolumeName
		}
		out = append(out, a)
		return nil
	})
	return out, err
}

// attachmentPodName is the attachment pod of volume handle in machine:
// one per pair, whichever VolumeAttachment asks for it.
func attachmentPodName(handle, machine string) string {
	sum := sha256.Sum256([]byte(handle + "/" + machine))
	return "attach-" + hex.EncodeToString(sum[:])[:20]
}

// attachScope is what one pass knows for attaching.
type attachScope struct {
	hc   *hypershiftv1alpha1.HostedCluster
	kube kubernetes.Interface
	ns   string
	// handles are the guest volumes' handles by volume name; byName this
	// cluster's infrastructure claims.
	handles map[string]string
	byName  map[string]*corev1.PersistentVolumeClaim
	// volumesComplete: every guest volume of the driver was read, so a
	// volume missing from handles is not one (otherwise it may be one
	// the pass did not reach: it waits).
	volumesComplete bool
	// pods are this cluster's attachment pods by their VolumeAttachment's
	// UID.
	pods map[string]*corev1.Pod
}

// attach brings attachment pods in line with the guest's
// VolumeAttachments of this driver: a pod for each one that is not being
// deleted, Ready once it holds the volume in the machine, when the
// attachment is reported; deleted for each that is, and the finalizer
// then let go. What a VolumeAttachment names — volume, node — is the
// guest's to write: only this cluster's claims are attached, only to
// machine pods of this cluster's machines namespace that have the hot-plug
// directory, and never more than Limits.MaxAttachmentPods attachment pods at
// once. Without Attach, nothing new is attached (the VolumeAttachment
// says why), and what was attached is still detached.
func (r *Reconciler) attach(ctx context.Context, sc *attachScope, attachments []guestAttachment, attachmentsComplete bool) []error {
	pods, err := r.attachmentPods(ctx, sc.hc, sc.ns)
	if err != nil {
		return []error{err}
	}
	sc.pods = pods
	var errs []error
	wanted := map[string]bool{}
	for i := range attachments {
		a := &attachments[i]
		wanted[string(a.va.UID)] = true
		if err := r.attachOne(ctx, sc, a); err != nil {
			errs = append(errs, fmt.Errorf("VolumeAttachment %s: %w", a.va.Name, err))
		}
	}
	// A pod whose VolumeAttachment is gone (deleted past its finalizer)
	// holds a volume no node asked for. After a pass cut short, each such
	// pod's VolumeAttachment is asked for by name.
	for uid, p := range pods {
		if wanted[uid] || p.DeletionTimestamp != nil {
			continue
		}
		if !attachmentsComplete {
			va, err := sc.kube.StorageV1().VolumeAttachments().Get(ctx, p.Annotations[AttachmentAnnotation], metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			if err == nil && string(va.UID) == uid {
				continue
			}
		}
		if err := guestpass.DeleteOwned(ctx, r.Client, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// NoAttachMessage is the attach error of every VolumeAttachment when this
// operator attaches nothing.
const NoAttachMessage = "this operator attaches no volumes: it runs without a machine image or --kubelet-dir (docs/volumes.md)"

// attachmentPods are the attachment pods of this cluster, by the UID of
// their VolumeAttachment.
func (r *Reconciler) attachmentPods(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, ns string) (map[string]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(ns),
		client.MatchingLabels{hostedref.OwnerUIDLabel: string(hc.UID)}, client.HasLabels{AttachmentUIDLabel}); err != nil {
		return nil, fmt.Errorf("attachment pods in %s: %w", ns, err)
	}
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		p := &list.Items[i]
		out[p.Labels[AttachmentUIDLabel]] = p
	}
	return out, nil
}

func (r *Reconciler) attachOne(ctx context.Context, sc *attachScope, a *guestAttachment) error {
	pod := sc.pods[string(a.va.UID)]
	if a.deleting {
		return r.detach(ctx, sc.kube, a, pod)
	}
	if pod != nil {
		return r.report(ctx, sc.kube, a, pod)
	}
	if r.Attach == nil {
		return r.setStatus(ctx, sc.kube, a, false, NoAttachMessage)
	}
	want, refusal, err := r.attachmentPod(ctx, sc, a)
	switch {
	case err != nil:
		return err
	case refusal != "":
		return r.setStatus(ctx, sc.kube, a, false, refusal)
	case want == nil:
		return nil // waiting: for the machine, or for a pass that reads the volume
	case len(sc.pods) >= r.Limits.MaxAttachmentPods:
		return r.setStatus(ctx, sc.kube, a, false, fmt.Sprintf("this cluster has %d attachment pods, the most it may have: detach a volume first", len(sc.pods)))
	}
	if !slices.Contains(a.va.Finalizers, AttachFinalizer) {
		// A merge patch conditional on the version read: the finalizers
		// as read and this one, nothing else of the object written.
		if err := patchAttachment(ctx, sc.kube, a, map[string]any{
			"metadata": map[string]any{"resourceVersion": a.va.ResourceVersion, "finalizers": append(slices.Clone(a.va.Finalizers), AttachFinalizer)},
		}, ""); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
	}
	err = r.Client.Create(ctx, want)
	if apierrors.IsAlreadyExists(err) {
		// The pod of this volume and machine holds it for another
		// VolumeAttachment (the guest made a second one).
		return r.setStatus(ctx, sc.kube, a, false, fmt.Sprintf("volume %s is attached to %s for another VolumeAttachment", want.Spec.Volumes[0].PersistentVolumeClaim.ClaimName, a.va.Spec.NodeName))
	}
	if err != nil {
		return fmt.Errorf("create attachment pod %s/%s: %w", sc.ns, want.Name, err)
	}
	sc.pods[string(a.va.UID)] = want
	return nil
}

// patchAttachment merge-patches a's VolumeAttachment (its subresource
// when set) and keeps what the API server returned.
func patchAttachment(ctx context.Context, kube kubernetes.Interface, a *guestAttachment, body map[string]any, subresource string) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	got, err := kube.StorageV1().VolumeAttachments().Patch(ctx, a.va.Name, types.MergePatchType, data, metav1.PatchOptions{}, sub...)
	if err != nil {
		return err
	}
	a.va = *got
	return nil
}

// attachmentPod is the pod that attaches a's volume to its node, or why
// it cannot be made (refusal), or neither while the machine pod is not
// on a node yet or the pass did not read the volume.
func (r *Reconciler) attachmentPod(ctx context.Context, sc *attachScope, a *guestAttachment) (*corev1.Pod, string, error) {
	if a.volume == "" {
		return nil, "only PersistentVolumes are attached by " + Driver + ", not inline volumes", nil
	}
	handle, ok := sc.handles[a.volume]
	switch {
	case !ok && !sc.volumesComplete:
		return nil, "", nil
	case !ok:
		return nil, fmt.Sprintf("PersistentVolume %s is not a volume of %s", a.volume, Driver), nil
	}
	claim := sc.byName[handle]
	if claim == nil {
		return nil, fmt.Sprintf("volume handle %q names no volume of this cluster", handle), nil
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return nil, "block volumes are not supported: only filesystem volumes are attached", nil
	}
	node := a.va.Spec.NodeName
	notMachine := fmt.Sprintf("node %q is not a machine of this cluster", node)
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return nil, notMachine, nil
	}
	machine := &corev1.Pod{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: sc.ns, Name: node}, machine)
	switch {
	case apierrors.IsNotFound(err):
		return nil, notMachine, nil
	case err != nil:
		return nil, "", fmt.Errorf("read machine %s: %w", node, err)
	case machine.Labels[kuberuntime.MachineLabel] != node || machine.Labels[kuberuntime.ManagedByLabel] != kuberuntime.ManagedBy:
		return nil, notMachine, nil
	case !hasHotplugDir(machine, kuberuntime.HotplugDir(r.Attach.KubeletDir, sc.ns, node)):
		return nil, fmt.Sprintf("machine %s was made without the hot-plug directory under this operator's --kubelet-dir: replace it (delete its machine pod) to attach volumes to it", node), nil
	case machine.Spec.NodeName == "" || machine.DeletionTimestamp != nil:
		return nil, "", nil
	}
	return r.renderAttachmentPod(sc.hc, sc.ns, a, handle, machine), "", nil
}

// hasHotplugDir: the machine pod has dir, its hot-plug directory, as a
// host path: the volumes held there show in the machine.
func hasHotplugDir(machine *corev1.Pod, dir string) bool {
	return slices.ContainsFunc(machine.Spec.Volumes, func(v corev1.Volume) bool {
		return v.HostPath != nil && v.HostPath.Path == dir
	})
}

// renderAttachmentPod: on the machine pod's management node, the claim
// mounted and the machine's hot-plug directory with bidirectional
// propagation, holding the one in the other (KubeVirt's hot-plug).
func (r *Reconciler) renderAttachmentPod(hc *hypershiftv1alpha1.HostedCluster, ns string, a *guestAttachment, handle string, machine *corev1.Pod) *corev1.Pod {
	hold := []string{"/hypershift", "machine", "attach", "--hotplug-dir", hotplugMount, "--name", handle}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: attachmentPodName(handle, machine.Name),
			Labels: map[string]string{
				kuberuntime.ManagedByLabel: kuberuntime.ManagedBy,
				hostedref.OwnerUIDLabel:    string(hc.UID),
				AttachmentUIDLabel:         string(a.va.UID),
				AttachedToLabel:            machine.Name,
			},
			Annotations: map[string]string{AttachmentAnnotation: a.va.Name},
		},
		Spec: corev1.PodSpec{
			// The machine pod's node; a node affinity, not nodeName, so
			// that the scheduler binds a WaitForFirstConsumer claim there.
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{machine.Spec.NodeName}}},
				}}},
			}},
			Tolerations:                   machine.Spec.Tolerations,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			Containers: []corev1.Container{{
				Name:            "attach",
				Image:           r.Attach.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         append(slices.Clone(hold), "--source", volumeMount),
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: append(hold, "--check")}},
					PeriodSeconds: 2,
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("5m"),
					corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "volume", MountPath: volumeMount},
					{Name: "hotplug", MountPath: hotplugMount, MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "volume", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: handle}}},
				{Name: "hotplug", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: kuberuntime.HotplugDir(r.Attach.KubeletDir, ns, machine.Name), Type: ptr.To(corev1.HostPathDirectoryOrCreate),
				}}},
			},
		},
	}
}

// report says in the VolumeAttachment's status whether its pod holds the
// volume: attached once the pod is Ready; not while it goes (deleted or
// evicted from outside) or has ended, and an ended pod is deleted for the
// next pass to make again; an error while it fails or cannot be placed.
func (r *Reconciler) report(ctx context.Context, kube kubernetes.Interface, a *guestAttachment, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return r.setStatus(ctx, kube, a, false, fmt.Sprintf("attachment pod %s is going: the volume is attached again once it is gone", pod.Name))
	}
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		if err := r.setStatus(ctx, kube, a, false, fmt.Sprintf("attachment pod %s ended (%s): it is made again", pod.Name, pod.Status.Reason)); err != nil {
			return err
		}
		return guestpass.DeleteOwned(ctx, r.Client, pod)
	}
	if podReady(pod) {
		return r.setStatus(ctx, kube, a, true, "")
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
			return r.setStatus(ctx, kube, a, false, fmt.Sprintf("attachment pod %s: %s", pod.Name, lastLine(t.Message)))
		}
	}
	// Not scheduled: its claim does not bind, or its node is full; the
	// scheduler's message says which, where the guest's pod shows it.
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return r.setStatus(ctx, kube, a, false, fmt.Sprintf("attachment pod %s is not scheduled: %s", pod.Name, lastLine(c.Message)))
		}
	}
	return nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// detach deletes a's attachment pod; once it is gone (its process has
// taken the volume out of the machine) the attachment is reported
// detached and the finalizer let go.
func (r *Reconciler) detach(ctx context.Context, kube kubernetes.Interface, a *guestAttachment, pod *corev1.Pod) error {
	if pod != nil {
		if pod.DeletionTimestamp == nil {
			return guestpass.DeleteOwned(ctx, r.Client, pod)
		}
		return nil
	}
	if !slices.Contains(a.va.Finalizers, AttachFinalizer) {
		return nil
	}
	if a.va.Status.Attached {
		if err := r.setStatus(ctx, kube, a, false, ""); err != nil {
			return err
		}
	}
	p, err := guestpass.FinalizerRemoval(a.va.Finalizers, AttachFinalizer)
	if err != nil {
		return err
	}
	if _, err := kube.StorageV1().VolumeAttachments().Patch(ctx, a.va.Name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	return nil
}

// setStatus writes the VolumeAttachment's status when it differs:
// attached, or the error of attaching; conditional on the resource
// version read.
func (r *Reconciler) setStatus(ctx context.Context, kube kubernetes.Interface, a *guestAttachment, attached bool, attachErr string) error {
	st := a.va.Status
	if st.Attached == attached && errorMessage(st.AttachError) == attachErr {
		return nil
	}
	va := a.va.DeepCopy()
	va.Status.Attached = attached
	va.Status.AttachError = nil
	if attachErr != "" {
		va.Status.AttachError = &storagev1.VolumeError{Time: metav1.Now(), Message: attachErr}
	}
	got, err := kube.StorageV1().VolumeAttachments().UpdateStatus(ctx, va, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	a.va = *got
	return nil
}

func errorMessage(e *storagev1.VolumeError) string {
	if e == nil {
		return ""
	}
	return e.Message
}

// lastLine is the last non-empty line of a termination message, bounded.
func lastLine(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == ' ') {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			s = s[i+1:]
			break
		}
	}
	if len(s) > 256 {
		s = s[:256]
	}
	return s
}
