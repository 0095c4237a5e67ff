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

// attach brings attachment pods in line with the guest's
// VolumeAttachments of this driver: a pod for each one that is not being
// deleted, Ready once it holds the volume in the machine, when the
// attachment is reported; deleted for each that is, and the finalizer
// then let go. byName are this cluster's infrastructure claims, handles
// the guest volumes' handles by volume name. What a VolumeAttachment
// names — volume, node — is the guest's to write: only this cluster's
// claims are attached, and only to machine pods of this cluster's
// machines namespace.
func (r *Reconciler) attach(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kube kubernetes.Interface, ns string,
	attachments []guestAttachment, handles map[string]string, byName map[string]*corev1.PersistentVolumeClaim, complete bool,
) []error {
	pods, err := r.attachmentPods(ctx, hc, ns)
	if err != nil {
		return []error{err}
	}
	var errs []error
	wanted := map[string]bool{}
	for i := range attachments {
		a := &attachments[i]
		wanted[string(a.va.UID)] = true
		if err := r.attachOne(ctx, hc, kube, ns, a, handles, byName, pods[string(a.va.UID)]); err != nil {
			errs = append(errs, fmt.Errorf("VolumeAttachment %s: %w", a.va.Name, err))
		}
	}
	if !complete {
		return errs
	}
	// A pod whose VolumeAttachment is gone (deleted past its finalizer)
	// holds a volume no node asked for.
	for uid, p := range pods {
		if !wanted[uid] && p.DeletionTimestamp == nil {
			if err := guestpass.DeleteOwned(ctx, r.Client, p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// NoAttachMessage is the attach error of every VolumeAttachment when this
// operator attaches nothing.
const NoAttachMessage = "this operator attaches no volumes: it runs without a machine image or --kubelet-dir (docs/volumes.md)"

// refuseAttach says in each VolumeAttachment that is not being deleted
// that nothing will attach it: the pod that waits for it says why.
func (r *Reconciler) refuseAttach(ctx context.Context, kube kubernetes.Interface, attachments []guestAttachment) []error {
	var errs []error
	for i := range attachments {
		if a := &attachments[i]; !a.deleting {
			if err := r.setStatus(ctx, kube, a, false, NoAttachMessage); err != nil {
				errs = append(errs, fmt.Errorf("VolumeAttachment %s: %w", a.va.Name, err))
			}
		}
	}
	return errs
}

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

func (r *Reconciler) attachOne(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kube kubernetes.Interface, ns string,
	a *guestAttachment, handles map[string]string, byName map[string]*corev1.PersistentVolumeClaim, pod *corev1.Pod,
) error {
	if a.deleting {
		return r.detach(ctx, kube, a, pod)
	}
	if !slices.Contains(a.va.Finalizers, AttachFinalizer) {
		va := a.va.DeepCopy()
		va.Finalizers = append(va.Finalizers, AttachFinalizer)
		got, err := kube.StorageV1().VolumeAttachments().Update(ctx, va, metav1.UpdateOptions{}) // conditional: the resourceVersion read
		if err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		a.va = *got
	}
	if pod != nil {
		return r.report(ctx, kube, a, pod)
	}
	want, refusal := r.attachmentPod(ctx, hc, ns, a, handles, byName)
	if refusal != "" {
		return r.setStatus(ctx, kube, a, false, refusal)
	}
	if want == nil {
		return nil // waiting for the machine
	}
	if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create attachment pod %s/%s: %w", ns, want.Name, err)
	}
	return nil
}

// attachmentPod is the pod that attaches a's volume to its node, or why
// it cannot be made (refusal), or neither while the machine pod is not
// on a node yet.
func (r *Reconciler) attachmentPod(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, ns string,
	a *guestAttachment, handles map[string]string, byName map[string]*corev1.PersistentVolumeClaim,
) (*corev1.Pod, string) {
	if a.volume == "" {
		return nil, "only PersistentVolumes are attached by " + Driver + ", not inline volumes"
	}
	handle, ok := handles[a.volume]
	if !ok {
		return nil, fmt.Sprintf("PersistentVolume %s is not a volume of %s", a.volume, Driver)
	}
	claim := byName[handle]
	if claim == nil {
		return nil, fmt.Sprintf("volume handle %q names no volume of this cluster", handle)
	}
	if claim.Spec.VolumeMode != nil && *claim.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		return nil, "block volumes are not supported: only filesystem volumes are attached"
	}
	node := a.va.Spec.NodeName
	if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
		return nil, fmt.Sprintf("node %q is not a machine of this cluster", node)
	}
	machine := &corev1.Pod{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: node}, machine)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && (machine.Labels[kuberuntime.MachineLabel] != node || machine.Labels[kuberuntime.ManagedByLabel] != kuberuntime.ManagedBy)):
		return nil, fmt.Sprintf("node %q is not a machine of this cluster", node)
	case err != nil:
		return nil, fmt.Sprintf("read machine %s: %v", node, err)
	case machine.Spec.NodeName == "" || machine.DeletionTimestamp != nil:
		return nil, ""
	}
	return r.renderAttachmentPod(hc, ns, a, handle, machine), ""
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
// volume: attached once the pod is Ready; an error while it fails.
func (r *Reconciler) report(ctx context.Context, kube kubernetes.Interface, a *guestAttachment, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return nil // a pod of a previous attachment goes; the next pass makes one
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
