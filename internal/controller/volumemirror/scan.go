package volumemirror

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
)

// Limits bound what one pass reads of a hosted cluster, whose admin
// decides how many claims and volumes it holds and how large they are.
type Limits struct {
	// PageSize is how many objects one list request asks for.
	PageSize int
	// MaxBytes bounds the bytes of every list response of one pass.
	MaxBytes int64
	// MaxAttachmentPods bounds the attachment pods of one cluster: each is
	// a privileged pod the guest's VolumeAttachments make.
	MaxAttachmentPods int
	// MaxVolumes bounds the claims of mirrored classes, and the mirrored
	// volumes, of one cluster.
	MaxVolumes int
}

// DefaultLimits are pages of 100 objects, 8 MiB a pass (and 8 more for
// VolumeAttachments), 100 volumes and 100 attachment pods.
var DefaultLimits = Limits{PageSize: 100, MaxBytes: 8 << 20, MaxVolumes: 100, MaxAttachmentPods: 100}

// ClassMapping ties a guest StorageClass to the infrastructure
// StorageClass the volumes of its claims are made of.
type ClassMapping struct {
	Guest, Infra string
}

// ClassesOf is a HostedCluster's mapping, from its
// spec.platform.host.storageDriver (type Manual); none otherwise.
func ClassesOf(hc *hypershiftv1alpha1.HostedCluster) []ClassMapping {
	if !hypershiftv1alpha1.MirrorsVolumes(hc.Spec.Platform) {
		return nil
	}
	var out []ClassMapping
	for _, m := range hc.Spec.Platform.Host.StorageDriver.Manual.StorageClassMapping {
		out = append(out, ClassMapping{Guest: m.GuestStorageClassName, Infra: m.InfraStorageClassName})
	}
	return out
}

// class is a mapped guest StorageClass as the pass found it.
type class struct {
	Infra           string
	Reclaim         corev1.PersistentVolumeReclaimPolicy
	AllowsExpansion bool
}

// guestClaim is what the mirror needs of a guest claim of a mapped class.
type guestClaim struct {
	Namespace, Name string
	UID             string
	ResourceVersion string
	Class           string
	VolumeName      string
	Deleting        bool
	AccessModes     []corev1.PersistentVolumeAccessMode
	VolumeMode      *corev1.PersistentVolumeMode
	Request         resource.Quantity
	Capacity        resource.Quantity // status.capacity
}

func (g guestClaim) uid() types.UID { return types.UID(g.UID) }

// guestVolume is what the mirror needs of a guest volume of this driver.
type guestVolume struct {
	Name, UID       string
	ResourceVersion string
	Handle          string
	Phase           corev1.PersistentVolumePhase
	Reclaim         corev1.PersistentVolumeReclaimPolicy
	ClaimUID        string
	Capacity        resource.Quantity
	Finalizers      []string
	Deleting        bool
}

// classes reads the mapped guest StorageClasses; a class that is missing
// or names another provisioner is not mirrored (its claims are another
// provisioner's).
func classes(ctx context.Context, kube kubernetes.Interface, mapping []ClassMapping) (map[string]class, error) {
	out := map[string]class{}
	for _, m := range mapping {
		sc, err := kube.StorageV1().StorageClasses().Get(ctx, m.Guest, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("StorageClass %s: %w", m.Guest, err)
		}
		if sc.Provisioner != Driver {
			continue
		}
		out[m.Guest] = class{
			Infra:           m.Infra,
			Reclaim:         reclaimOf(sc),
			AllowsExpansion: sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion,
		}
	}
	return out, nil
}

func reclaimOf(sc *storagev1.StorageClass) corev1.PersistentVolumeReclaimPolicy {
	if sc.ReclaimPolicy != nil && *sc.ReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
		return corev1.PersistentVolumeReclaimRetain
	}
	return corev1.PersistentVolumeReclaimDelete
}

// scan reads the guest's claims of the mapped classes and its volumes of
// this driver under one budget; the first read that fails (or is
// truncated) ends it.
func scan(ctx context.Context, kube kubernetes.Interface, mapped map[string]class, l Limits) ([]guestClaim, []guestVolume, error) {
	b := &guestpass.Budget{Left: l.MaxBytes}
	claims, err := scanClaims(ctx, kube, mapped, l, b)
	if err != nil {
		return claims, nil, err
	}
	volumes, err := scanVolumes(ctx, kube, l, b)
	return claims, volumes, err
}

// scanClaims reads the guest's claims and returns those of the mapped
// classes. A read cut short by the limits returns what it read with an
// error wrapping guestpass.ErrTruncated.
func scanClaims(ctx context.Context, kube kubernetes.Interface, mapped map[string]class, l Limits, b *guestpass.Budget) ([]guestClaim, error) {
	var out []guestClaim
	err := guestpass.ListPages(ctx, kube.CoreV1().RESTClient(), "/api/v1/persistentvolumeclaims", nil, l.PageSize, b, func(raw json.RawMessage) error {
		var pvc corev1.PersistentVolumeClaim
		if err := json.Unmarshal(raw, &pvc); err != nil {
			return fmt.Errorf("a PersistentVolumeClaim: %w", err)
		}
		if pvc.Spec.StorageClassName == nil {
			return nil
		}
		if _, ok := mapped[*pvc.Spec.StorageClassName]; !ok {
			return nil
		}
		if len(out) == l.MaxVolumes {
			return fmt.Errorf("more than %d claims of mirrored classes: %w", l.MaxVolumes, guestpass.ErrTruncated)
		}
		out = append(out, guestClaim{
			Namespace: pvc.Namespace, Name: pvc.Name, UID: string(pvc.UID), ResourceVersion: pvc.ResourceVersion,
			Class: *pvc.Spec.StorageClassName, VolumeName: pvc.Spec.VolumeName,
			Deleting:    pvc.DeletionTimestamp != nil,
			AccessModes: pvc.Spec.AccessModes, VolumeMode: pvc.Spec.VolumeMode,
			Request:  pvc.Spec.Resources.Requests[corev1.ResourceStorage],
			Capacity: pvc.Status.Capacity[corev1.ResourceStorage],
		})
		return nil
	})
	return out, err
}

// scanVolumes reads the guest's volumes and returns those of this
// driver.
func scanVolumes(ctx context.Context, kube kubernetes.Interface, l Limits, b *guestpass.Budget) ([]guestVolume, error) {
	var out []guestVolume
	err := guestpass.ListPages(ctx, kube.CoreV1().RESTClient(), "/api/v1/persistentvolumes", nil, l.PageSize, b, func(raw json.RawMessage) error {
		var pv corev1.PersistentVolume
		if err := json.Unmarshal(raw, &pv); err != nil {
			return fmt.Errorf("a PersistentVolume: %w", err)
		}
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != Driver {
			return nil
		}
		if len(out) == l.MaxVolumes {
			return fmt.Errorf("more than %d volumes of %s: %w", l.MaxVolumes, Driver, guestpass.ErrTruncated)
		}
		v := guestVolume{
			Name: pv.Name, UID: string(pv.UID), ResourceVersion: pv.ResourceVersion,
			Handle: pv.Spec.CSI.VolumeHandle, Phase: pv.Status.Phase, Reclaim: pv.Spec.PersistentVolumeReclaimPolicy,
			Capacity:   pv.Spec.Capacity[corev1.ResourceStorage],
			Finalizers: slices.Clone(pv.Finalizers), Deleting: pv.DeletionTimestamp != nil,
		}
		if pv.Spec.ClaimRef != nil {
			v.ClaimUID = string(pv.Spec.ClaimRef.UID)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}
