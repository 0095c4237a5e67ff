package volumemirror

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
)

const (
	// Driver is the CSI driver of the mirrored volumes in hosted
	// clusters: the provisioner of their StorageClasses and the driver of
	// their PersistentVolumes.
	Driver = "csi.hypershift.dev"
	// GuestClaimUIDLabel on an infrastructure claim is the UID of the
	// guest claim it was made for.
	GuestClaimUIDLabel = "hypershift.dev/guest-claim-uid"
	// GuestClaimAnnotation on an infrastructure claim names the guest
	// claim, NAMESPACE/NAME.
	GuestClaimAnnotation = "hypershift.dev/guest-claim"
	// RetainedLabel on an infrastructure claim says its guest volume was
	// deleted with reclaim policy Retain: the claim is kept until the
	// cluster goes.
	RetainedLabel = "hypershift.dev/retained"
	// Finalizer on a guest volume holds it until its infrastructure
	// claim is deleted (reclaim policy Delete) or marked retained.
	Finalizer = "csi.hypershift.dev/infra-volume"
	// ProvisionedByAnnotation is Kubernetes' annotation naming a volume's
	// provisioner.
	ProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
)

// infraName is the infrastructure claim's name: the guest claim's UID, so
// that a claim made again under an old name gets a volume of its own.
func infraName(guestUID string) string { return "vol-" + guestUID }

// volumeName is the guest volume's name, as Kubernetes' external
// provisioner names the volumes it makes: pvc-<claim UID>.
func volumeName(guestUID string) string { return "pvc-" + guestUID }

func infraLabels(hc *hypershiftv1alpha1.HostedCluster, guestUID string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/managed-by":  "hypershift",
		hostedref.OwnerUIDLabel:         string(hc.UID),
		hostedref.ClusterNamespaceLabel: hc.Namespace,
		hostedref.ClusterNameLabel:      hc.Name,
		GuestClaimUIDLabel:              guestUID,
	}
}

// infraClaim is the claim in the machines namespace ns that holds
// the data of guest claim g, of class infraClass.
func infraClaim(hc *hypershiftv1alpha1.HostedCluster, ns, infraClass string, g guestClaim) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: infraName(g.UID),
			Labels:      infraLabels(hc, g.UID),
			Annotations: map[string]string{GuestClaimAnnotation: g.Namespace + "/" + g.Name},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &infraClass,
			AccessModes:      g.AccessModes,
			VolumeMode:       g.VolumeMode,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: g.Request,
			}},
		},
	}
}

// guestVolume is the guest PersistentVolume bound in advance to claim g
// (the claim's controller binds them), backed by infrastructure claim
// handle.
func guestVolumeFor(g guestClaim, c class) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        volumeName(g.UID),
			Annotations: map[string]string{ProvisionedByAnnotation: Driver},
			Finalizers:  []string{Finalizer},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: g.Request},
			AccessModes: g.AccessModes,
			VolumeMode:  g.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: g.Namespace, Name: g.Name, UID: g.uid(),
			},
			StorageClassName:              g.Class,
			PersistentVolumeReclaimPolicy: c.Reclaim,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: Driver, VolumeHandle: infraName(g.UID),
			}},
		},
	}
}

// atLeast reports whether q is at least want.
func atLeast(q, want resource.Quantity) bool { return q.Cmp(want) >= 0 }
