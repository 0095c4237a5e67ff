package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ObjectSet is one revision of an ObjectDeployment: its phases, applied in
// order. The ObjectDeployment controller makes them (named
// <deployment>-<revision>); the spec is immutable.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.spec.lifecycleState`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ObjectSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ObjectSetSpec   `json:"spec"`
	Status ObjectSetStatus `json:"status,omitempty"`
}

// ObjectSetLifecycleState is Active (applied and probed) or Archived
// (superseded: kept as history, its objects handed to the newer revision
// or deleted).
// +kubebuilder:validation:Enum=Active;Archived
type ObjectSetLifecycleState string

// Lifecycle states of an ObjectSet.
const (
	ObjectSetActive   ObjectSetLifecycleState = "Active"
	ObjectSetArchived ObjectSetLifecycleState = "Archived"
)

// ObjectSetSpec is a revision.
//
// +kubebuilder:validation:XValidation:rule="self.revision == oldSelf.revision",message="spec.revision of an ObjectSet is immutable: a change is a new revision of its ObjectDeployment"
type ObjectSetSpec struct {
	// Revision is the number of this revision, from 1.
	// +kubebuilder:validation:Minimum=1
	Revision int64 `json:"revision"`
	// LifecycleState: Active or Archived.
	// +kubebuilder:default=Active
	// +optional
	LifecycleState ObjectSetLifecycleState `json:"lifecycleState,omitempty"`
	// +optional
	Paused bool `json:"paused,omitempty"`

	ObjectSetTemplateSpec `json:",inline"`
}

// ObjectSetStatus is the observed state of an ObjectSet.
type ObjectSetStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Holding names what holds this revision's rollout; empty once it is
	// Available.
	// +optional
	Holding *RolloutHold `json:"holding,omitempty"`
	// Phases is how far each phase got, in order.
	// +listType=atomic
	// +optional
	Phases []ObjectSetPhaseStatus `json:"phases,omitempty"`
	// ControllerOf names the objects this revision applied.
	// +listType=atomic
	// +optional
	ControllerOf []ControlledObjectReference `json:"controllerOf,omitempty"`
}

// ObjectSetPhaseStatus is one phase's progress.
type ObjectSetPhaseStatus struct {
	Name string `json:"name"`
	// +optional
	Class string `json:"class,omitempty"`
	// State: Pending (an earlier phase holds), Applied (probes not all
	// passing), Available.
	State string `json:"state"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true

// ObjectSetList is a list of ObjectSets.
type ObjectSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ObjectSet `json:"items"`
}
