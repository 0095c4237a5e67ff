package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VersionState says whether a version of the version history was rolled
// out to every component.
//
// +kubebuilder:validation:Enum=Partial;Completed
type VersionState string

const (
	// PartialVersion means the rollout started and has not reached every
	// component (yet, or ever: a newer version superseded it).
	PartialVersion VersionState = "Partial"
	// CompletedVersion means every versioned component ran the version.
	CompletedVersion VersionState = "Completed"
)

// MaxVersionHistory is how many entries status.versionHistory keeps.
const MaxVersionHistory = 10

// VersionHistory is one version a control plane was rolled out to, as
// HyperShift's (and OpenShift's ClusterVersion's) history.
type VersionHistory struct {
	// version is the Kubernetes version, such as v1.37.1.
	Version string `json:"version"`
	// state is Completed once every versioned component ran the version.
	State VersionState `json:"state"`
	// startedTime is when the rollout to the version began.
	StartedTime metav1.Time `json:"startedTime"`
	// completionTime is when it was Completed; unset while Partial.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}
