// Package volumemirror gives the claims of hosted clusters whose machines
// are pods of the management cluster (platform Host on the kube runtime)
// volumes of the management cluster: KubeVirt CSI's design. A guest
// PersistentVolumeClaim of a StorageClass the HostedCluster maps to an
// infrastructure StorageClass gets a claim of that class in the namespace
// of the cluster's machines (the attachment pods that will mount it are
// privileged, as the machine pods are, which the control-plane namespace's
// Pod Security Standard refuses) and a guest PersistentVolume of CSI driver
// csi.hypershift.dev whose volume handle names it. Growing the guest
// claim grows the infrastructure claim; releasing the guest volume
// (reclaim policy Delete) deletes it.
//
// With Attach set, a guest VolumeAttachment of the driver gets an
// attachment pod beside the claim that holds it in the machine's hot-plug
// directory (attach.go); the node plugin in the machine publishes it to
// the pod (internal/nodes/csinode): docs/volumes.md.
//
// What the hosted cluster's admin writes — its claims, volumes and
// StorageClasses — is input: it is read in bounded pages under a byte
// budget per pass; which infrastructure class a guest class maps to comes
// from the HostedCluster, never from the guest; and only infrastructure
// claims labelled as this cluster's are ever changed or deleted, whatever
// a guest volume's handle names.
package volumemirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/hostedref"
	kuberuntime "hypershift.dev/internal/runtime/kube"
)

// DefaultInterval is how often a cluster's claims are read again.
const DefaultInterval = 10 * time.Second

// Event reasons, on the HostedCluster.
const (
	// ScanTruncatedReason: a pass stopped at its limits; no
	// infrastructure claim was deleted for being unreferenced in it.
	ScanTruncatedReason = "VolumeScanTruncated"
	// NameTakenReason: a claim of an infrastructure claim's name is not
	// this cluster's claim for that guest claim; it is left alone.
	NameTakenReason = "VolumeNameTaken"
)

// Reconciler mirrors the guest claims of mapped StorageClasses of
// HostedClusters of platform Host.
type Reconciler struct {
	// Client reads HostedClusters and HostedControlPlanes (cached) and
	// writes infrastructure claims.
	Client client.Client
	// APIReader reads infrastructure claims from the API server.
	APIReader client.Reader
	Guests    guestpass.Guests
	// Classes is a cluster's mapping of guest to infrastructure
	// StorageClasses; none: nothing is mirrored.
	Classes func(*hypershiftv1alpha1.HostedCluster) []ClassMapping
	// Limits bound each pass; zero: DefaultLimits.
	Limits Limits
	// Interval between passes; zero: DefaultInterval.
	Interval time.Duration
	// Recorder may be nil.
	Recorder events.EventRecorder
	// Attach, set, attaches the volumes to the machines that use them
	// (attach.go); nil: volumes are provisioned, never attached.
	Attach *Attach
}

// SetupWithManager registers the controller: a pass for each
// HostedCluster of platform Host that maps classes every Interval.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Limits == (Limits{}) {
		r.Limits = DefaultLimits
	}
	if r.Interval == 0 {
		r.Interval = DefaultInterval
	}
	return (&guestpass.Loop{
		Name: "volumemirror", Client: r.Client, Guests: r.Guests, Interval: r.Interval,
		Applies: func(hc *hypershiftv1alpha1.HostedCluster) bool {
			return hc.Spec.Platform.Type == hypershiftv1alpha1.HostPlatform && len(r.mapping(hc)) > 0
		},
		Pass: func(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kube kubernetes.Interface) error {
			return r.Pass(ctx, hc, kube, r.mapping(hc))
		},
	}).SetupWithManager(mgr)
}

func (r *Reconciler) mapping(hc *hypershiftv1alpha1.HostedCluster) []ClassMapping {
	if r.Classes == nil {
		return nil
	}
	return r.Classes(hc)
}

// Pass reads the hosted cluster's claims of the mapped classes and its
// volumes of this driver, and brings the infrastructure claims and the
// guest volumes in line: provisions, grows and deletes. Every write is
// conditional on the resource version (or, for a delete, the UID) read in
// the pass.
func (r *Reconciler) Pass(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, kube kubernetes.Interface, mapping []ClassMapping) error {
	ns := kuberuntime.MachinesNamespace(hostedref.ControlPlaneNamespace(hc))
	mapped, err := classes(ctx, kube, mapping)
	if err != nil {
		return err
	}
	claims, volumes, scanErr := scan(ctx, kube, mapped, r.Limits)
	truncated := errors.Is(scanErr, guestpass.ErrTruncated)
	if scanErr != nil && !truncated {
		return scanErr
	}
	byName, err := r.infraClaims(ctx, hc, ns)
	if err != nil {
		return err
	}
	volumeOf := map[string]guestVolume{} // by claim UID
	handles := map[string]bool{}
	handleOf := map[string]string{} // by volume name
	for _, v := range volumes {
		handles[v.Handle] = true
		handleOf[v.Name] = v.Handle
		if v.Handle == infraName(v.ClaimUID) {
			volumeOf[v.ClaimUID] = v
		}
	}
	var errs []error
	claimed := map[string]bool{}
	for _, g := range claims {
		claimed[g.UID] = true
		if g.Deleting {
			continue
		}
		c := mapped[g.Class]
		v, has := volumeOf[g.UID]
		var err error
		switch {
		case !has && g.VolumeName == "":
			err = r.provision(ctx, hc, ns, kube, g, c, byName[infraName(g.UID)])
		case has && g.VolumeName == v.Name:
			err = r.grow(ctx, kube, g, c, v, byName[v.Handle])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("claim %s/%s: %w", g.Namespace, g.Name, err))
		}
	}
	for _, v := range volumes {
		if err := r.reclaim(ctx, kube, v, byName[v.Handle]); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", v.Name, err))
		}
	}
	// VolumeAttachments under a budget of their own: a guest with many
	// claims still gets its volumes attached and detached.
	attachments, attErr := scanAttachments(ctx, kube, r.Limits, &guestpass.Budget{Left: r.Limits.MaxBytes})
	attTruncated := errors.Is(attErr, guestpass.ErrTruncated)
	if attErr != nil && !attTruncated {
		return errors.Join(append(errs, attErr)...)
	}
	sc := &attachScope{hc: hc, kube: kube, ns: ns, handles: handleOf, byName: byName, volumesComplete: !truncated}
	errs = append(errs, r.attach(ctx, sc, attachments, !attTruncated)...)
	if attTruncated {
		r.event(hc, corev1.EventTypeWarning, ScanTruncatedReason, "Scan",
			"the hosted cluster's VolumeAttachments were read only in part (%v): the first were attached or detached, the others wait", attErr)
		errs = append(errs, attErr)
	}
	if truncated {
		r.event(hc, corev1.EventTypeWarning, ScanTruncatedReason, "Scan",
			"the hosted cluster's claims and volumes were read only in part (%v): no infrastructure claim was deleted for being unreferenced", scanErr)
		return errors.Join(append(errs, scanErr)...)
	}
	return errors.Join(append(errs, r.sweep(ctx, byName, claimed, handles)...)...)
}

// sweep, after a complete pass, deletes the infrastructure claims that no
// guest claim (by UID) or volume (by handle) refers to — their guest
// claim went before its volume was made — unless their volume was
// retained.
func (r *Reconciler) sweep(ctx context.Context, byName map[string]*corev1.PersistentVolumeClaim, claimed, handles map[string]bool) []error {
	var errs []error
	for name, c := range byName {
		if claimed[c.Labels[GuestClaimUIDLabel]] || handles[name] || c.Labels[RetainedLabel] == "true" {
			continue
		}
		if err := guestpass.DeleteOwned(ctx, r.Client, c); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// infraClaims are the infrastructure claims labelled as this cluster's,
// by name. Only these are ever acted on: a guest volume's handle that
// names any other claim finds nothing here.
func (r *Reconciler) infraClaims(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, ns string) (map[string]*corev1.PersistentVolumeClaim, error) {
	infra := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, infra, client.InNamespace(ns),
		client.MatchingLabels{hostedref.OwnerUIDLabel: string(hc.UID)}, client.HasLabels{GuestClaimUIDLabel}); err != nil {
		return nil, fmt.Errorf("infrastructure claims in %s: %w", ns, err)
	}
	byName := map[string]*corev1.PersistentVolumeClaim{}
	for i := range infra.Items {
		c := &infra.Items[i]
		if c.Name == infraName(c.Labels[GuestClaimUIDLabel]) {
			byName[c.Name] = c
		}
	}
	return byName, nil
}

// provision makes guest claim g's infrastructure claim (or finds this
// cluster's) and the guest volume bound in advance to g.
func (r *Reconciler) provision(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, ns string, kube kubernetes.Interface,
	g guestClaim, c class, have *corev1.PersistentVolumeClaim,
) error {
	if g.Request.IsZero() {
		return errors.New("no spec.resources.requests.storage")
	}
	if have == nil {
		if _, err := kuberuntime.EnsureMachinesNamespace(ctx, r.Client, r.APIReader, hostedref.ControlPlaneNamespace(hc), string(hc.UID)); err != nil {
			return err
		}
		want := infraClaim(hc, ns, c.Infra, g)
		err := r.Client.Create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			// Not in this cluster's list: another's, or a user's.
			r.event(hc, corev1.EventTypeWarning, NameTakenReason, "Provision",
				"PersistentVolumeClaim %s/%s is not this cluster's volume of %s/%s: left alone, the guest claim stays pending",
				ns, want.Name, g.Namespace, g.Name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("create infrastructure claim %s/%s: %w", ns, want.Name, err)
		}
	}
	_, err := kube.CoreV1().PersistentVolumes().Create(ctx, guestVolumeFor(g, c), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create volume: %w", err)
	}
	return nil
}

// grow follows a guest claim's larger request: first the infrastructure
// claim's (once it is bound), then, once that one has the capacity (its
// class's provisioner grew it), the guest volume's and the guest claim's
// status.
func (r *Reconciler) grow(ctx context.Context, kube kubernetes.Interface, g guestClaim, c class, v guestVolume, infra *corev1.PersistentVolumeClaim) error {
	if infra == nil {
		return nil
	}
	if c.AllowsExpansion && !atLeast(v.Capacity, g.Request) {
		if !atLeast(infra.Spec.Resources.Requests[corev1.ResourceStorage], g.Request) {
			if infra.Status.Phase != corev1.ClaimBound {
				return nil // a pending claim's request cannot change
			}
			upd := infra.DeepCopy()
			upd.Spec.Resources.Requests[corev1.ResourceStorage] = g.Request
			if err := r.Client.Update(ctx, upd); err != nil { // conditional: infra's resourceVersion
				return fmt.Errorf("grow infrastructure claim %s: %w", infra.Name, err)
			}
			return nil
		}
		if !atLeast(infra.Status.Capacity[corev1.ResourceStorage], g.Request) {
			return nil // the infrastructure is growing it
		}
		if err := patch(ctx, kube, "persistentvolumes", "", v.Name, v.ResourceVersion, map[string]any{
			"spec": map[string]any{"capacity": map[string]any{"storage": g.Request.String()}},
		}, ""); err != nil {
			return err
		}
		v.Capacity = g.Request
	}
	if g.Capacity.IsZero() || atLeast(g.Capacity, v.Capacity) {
		return nil // not bound yet (the claim's controller sets it), or in line
	}
	return patch(ctx, kube, "persistentvolumeclaims", g.Namespace, g.Name, g.ResourceVersion, map[string]any{
		"status": map[string]any{"capacity": map[string]any{"storage": v.Capacity.String()}},
	}, "status")
}

// reclaim deletes a released guest volume's infrastructure claim (reclaim
// policy Delete) and then the volume, or, for a volume deleted with
// policy Retain, marks the infrastructure claim retained and lets the
// volume go.
func (r *Reconciler) reclaim(ctx context.Context, kube kubernetes.Interface, v guestVolume, infra *corev1.PersistentVolumeClaim) error {
	released := v.Phase == corev1.VolumeReleased || v.Phase == corev1.VolumeFailed
	switch {
	case v.Reclaim == corev1.PersistentVolumeReclaimDelete && (released || v.Deleting):
		if infra != nil {
			if err := guestpass.DeleteOwned(ctx, r.Client, infra); err != nil {
				return err
			}
		}
	case v.Deleting && infra != nil && infra.Labels[RetainedLabel] != "true":
		upd := infra.DeepCopy()
		upd.Labels[RetainedLabel] = "true"
		if err := r.Client.Update(ctx, upd); err != nil {
			return fmt.Errorf("mark infrastructure claim %s retained: %w", infra.Name, err)
		}
	case !v.Deleting:
		return nil
	}
	if i := slices.Index(v.Finalizers, Finalizer); i >= 0 {
		p, err := guestpass.FinalizerRemoval(v.Finalizers, Finalizer)
		if err != nil {
			return err
		}
		if _, err := kube.CoreV1().PersistentVolumes().Patch(ctx, v.Name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("remove finalizer: %w", err)
		}
	}
	if v.Deleting {
		return nil
	}
	uid := types.UID(v.UID)
	err := kube.CoreV1().PersistentVolumes().Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// patch merge-patches a guest object (of resource, in namespace ns, ""
// for none), conditional on the resource version read.
func patch(ctx context.Context, kube kubernetes.Interface, resource, ns, name, rv string, body map[string]any, subresource string) error {
	body["metadata"] = map[string]any{"resourceVersion": rv}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req := kube.CoreV1().RESTClient().Patch(types.MergePatchType).Resource(resource).Name(name).Body(data)
	if ns != "" {
		req = req.Namespace(ns)
	}
	if subresource != "" {
		req = req.SubResource(subresource)
	}
	if err := req.Do(ctx).Error(); err != nil {
		return fmt.Errorf("patch %s %s: %w", resource, name, err)
	}
	return nil
}

func (r *Reconciler) event(hc *hypershiftv1alpha1.HostedCluster, typ, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(hc, nil, typ, reason, action, note, args...)
	}
}
