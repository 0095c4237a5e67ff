package v1alpha1

// FencedAnnotation set to "true" on a HostedCluster fences its control
// plane: etcd keeps running with its data, and every process that can
// write to it — the API servers, the controller manager, the scheduler,
// the Konnectivity server and the endpoint proxy — is stopped, so no
// write reaches etcd. Removing the annotation (or setting "false") brings
// them back on the same ports. `hypershift migrate cluster` fences the
// source before its final snapshot. The HostedCluster controller copies an
// accepted fence onto the HostedControlPlane.
const FencedAnnotation = "hypershift.dev/fenced"

// Fenced is True while only etcd of the control plane runs (the fence
// holds); False with FencingReason while the other instances stop, and
// with NotFencedReason otherwise. A fence the controller cannot apply is
// False with FenceRefusedReason and a message naming why.
const Fenced ConditionType = "Fenced"

// Fenced reasons; FencedReason is also the reason of Available,
// KubeAPIServerAvailable, Progressing and DataPlaneAvailable while fenced.
const (
	FencedReason       ConditionReason = "Fenced"
	FencingReason      ConditionReason = "Fencing"
	NotFencedReason    ConditionReason = "NotFenced"
	FenceRefusedReason ConditionReason = "FenceRefused"
	// HostedClusterFencedReason (NodePool Ready): the pool's cluster is
	// fenced; its machines are stopped until the fence is lifted.
	HostedClusterFencedReason ConditionReason = "HostedClusterFenced"
)
