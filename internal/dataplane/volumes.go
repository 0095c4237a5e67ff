package dataplane

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// VolumeDriver is the CSI driver of the volumes a hosted cluster gets of
// the management cluster's storage (docs/volumes.md).
const VolumeDriver = "csi.hypershift.dev"

// Volumes are the StorageClasses a hosted cluster gets of the management
// cluster's storage (spec.platform.host.storageDriver).
type Volumes struct {
	// StorageClasses are the guest classes' names.
	StorageClasses []string
}

// volumesObjects are the CSIDriver (attach required: the operator's
// attacher holds the volume in the machine before the node plugin
// publishes it) and a StorageClass of it for each mapped class. The
// classes bind at once: where the volume is made does not depend on the
// node.
func volumesObjects(v Volumes) []client.Object {
	objs := []client.Object{&storagev1.CSIDriver{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSIDriver"},
		ObjectMeta: metav1.ObjectMeta{Name: VolumeDriver},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(true),
			PodInfoOnMount:       ptr.To(false),
			FSGroupPolicy:        ptr.To(storagev1.FileFSGroupPolicy),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		},
	}}
	for _, name := range v.StorageClasses {
		objs = append(objs, &storagev1.StorageClass{
			TypeMeta:             metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
			ObjectMeta:           metav1.ObjectMeta{Name: name},
			Provisioner:          VolumeDriver,
			ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
			AllowVolumeExpansion: ptr.To(true),
			VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		})
	}
	return objs
}
