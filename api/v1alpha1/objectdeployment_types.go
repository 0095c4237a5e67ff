package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ObjectDeploymentLabel names, on each ObjectSet, the ObjectDeployment it
// is a revision of; list a deployment's revisions by it.
const ObjectDeploymentLabel = "addons.hypershift.dev/objectdeployment"

// ObjectDeployment rolls a set of objects out in ordered phases, as Package
// Operator's package-operator.run/v1alpha1 ObjectDeployment does (the same
// shape, our group): every change of spec.template makes a new ObjectSet
// revision; the previous one keeps serving until the new one is Available.
// In a control-plane namespace, a phase of class hosted-cluster goes to
// that hosted cluster's API server (docs/addons.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=od;addon;addons
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Holding",type=string,JSONPath=`.status.holding.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ObjectDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ObjectDeploymentSpec   `json:"spec"`
	Status ObjectDeploymentStatus `json:"status,omitempty"`
}

// ObjectDeploymentSpec is the desired state of an ObjectDeployment.
type ObjectDeploymentSpec struct {
	// RevisionHistoryLimit is how many superseded ObjectSets are kept
	// (archived); default 10.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// Selector selects the ObjectSets of this deployment; it must match
	// the template's labels (else Progressing=False, reason
	// InvalidSelector, and no revision is made). Optional here (Package
	// Operator requires it): the controller finds its ObjectSets by owner.
	// +optional
	Selector metav1.LabelSelector `json:"selector,omitempty"`
	// Template is what each revision's ObjectSet is made from.
	Template ObjectSetTemplate `json:"template"`
	// Paused stops reconciling: no new revision, no apply, no deletion of
	// superseded objects.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// ObjectSetTemplate is the template of a revision.
type ObjectSetTemplate struct {
	// Metadata: its labels are put on every ObjectSet.
	// +optional
	Metadata ObjectSetTemplateMetadata `json:"metadata,omitempty"`
	Spec     ObjectSetTemplateSpec     `json:"spec"`
}

// ObjectSetTemplateMetadata is the part of an ObjectSet's metadata a
// template sets.
type ObjectSetTemplateMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ObjectSetTemplateSpec is the content of one revision.
//
// +kubebuilder:validation:XValidation:rule="self.phases.all(p, self.phases.exists_one(q, q.name == p.name))",message="spec.template.spec.phases[].name must be unique within the template"
type ObjectSetTemplateSpec struct {
	// Phases are applied in order; a phase starts when every object of the
	// phases before it passes the availability probes.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Phases []ObjectSetTemplatePhase `json:"phases"`
	// AvailabilityProbes judge the objects they select; all must pass for
	// a phase (and the revision) to be Available. No probe selecting an
	// object: it is Available once applied.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	AvailabilityProbes []ObjectSetProbe `json:"availabilityProbes,omitempty"`
	// SuccessDelaySeconds is how long a new revision stays Available before
	// the previous one is archived and the objects only it had are deleted.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SuccessDelaySeconds int32 `json:"successDelaySeconds,omitempty"`
}

// HostedClusterPhaseClass routes a phase to the hosted cluster of the
// control-plane namespace the ObjectDeployment is in.
const HostedClusterPhaseClass = "hosted-cluster"

// ObjectSetTemplatePhase is one phase of a revision.
type ObjectSetTemplatePhase struct {
	// Name of the phase, unique in the template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.template.spec.phases[].name must be a DNS label: lower-case letters, digits and '-'"
	Name string `json:"name"`
	// Class routes the phase: empty applies it to the management cluster in
	// the ObjectDeployment's namespace; hosted-cluster to the hosted
	// cluster of that control-plane namespace. As in Package Operator, any
	// other class is admitted (another controller may handle it there); here
	// such a phase holds the rollout with reason Unsupported naming the class.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$')",message="spec.template.spec.phases[].class must be empty (management cluster), hosted-cluster, or another lower-case DNS name"
	// +optional
	Class string `json:"class,omitempty"`
	// Objects of the phase, applied with server-side apply.
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Objects []ObjectSetObject `json:"objects,omitempty"`
	// Slices name ObjectSlices (Package Operator's way to split big
	// packages). Admitted for compatibility; a phase that names slices is
	// held with a message saying they are not supported here.
	// +listType=atomic
	// +optional
	Slices []string `json:"slices,omitempty"`
}

// CollisionProtection says which existing objects a rollout may take over.
// +kubebuilder:validation:Enum=Prevent;IfNoController;None
type CollisionProtection string

const (
	// CollisionPrevent (default): only objects this ObjectDeployment
	// created or owns.
	CollisionPrevent CollisionProtection = "Prevent"
	// CollisionIfNoController also adopts an existing object that no other
	// ObjectDeployment owns.
	CollisionIfNoController CollisionProtection = "IfNoController"
	// CollisionNone also adopts an object of another ObjectDeployment.
	CollisionNone CollisionProtection = "None"
)

// ObjectSetObject is one object of a phase.
type ObjectSetObject struct {
	// Object is the full manifest (apiVersion, kind, metadata.name; the
	// namespace of a namespaced object in a management-cluster phase is
	// the ObjectDeployment's).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:validation:XValidation:rule="has(self.metadata.name) && self.metadata.name != ''",message="spec.template.spec.phases[].objects[].object.metadata.name is required"
	Object unstructured.Unstructured `json:"object"`
	// CollisionProtection: which existing object may be adopted; default
	// Prevent.
	// +optional
	CollisionProtection CollisionProtection `json:"collisionProtection,omitempty"`
	// ConditionMappings copy conditions of the object into the ObjectSet's
	// status under another type.
	// +listType=atomic
	// +optional
	ConditionMappings []ConditionMapping `json:"conditionMappings,omitempty"`
}

// ConditionMapping maps one condition type of an object to another type in
// the ObjectSet's status.
type ConditionMapping struct {
	// +kubebuilder:validation:MinLength=1
	SourceType string `json:"sourceType"`
	// DestinationType is a condition type: an optional DNS-subdomain
	// prefix and "/", then letters, digits, '-', '_' and '.'.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	DestinationType string `json:"destinationType"`
}

// ObjectSetProbe is a set of probes and the objects they judge.
type ObjectSetProbe struct {
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Probes   []Probe       `json:"probes"`
	Selector ProbeSelector `json:"selector"`
}

// ProbeSelector selects objects by kind and, optionally, labels.
type ProbeSelector struct {
	Kind PackageProbeKindSpec `json:"kind"`
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// PackageProbeKindSpec is a group and kind; group "" is the core group.
type PackageProbeKindSpec struct {
	// +optional
	Group string `json:"group"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// Probe holds up to three checks; every one that is set must pass.
//
// +kubebuilder:validation:XValidation:rule="has(self.condition) || has(self.fieldsEqual) || has(self.cel)",message="spec.template.spec.availabilityProbes[].probes[] must set condition, fieldsEqual or cel"
type Probe struct {
	// +optional
	Condition *ProbeConditionSpec `json:"condition,omitempty"`
	// +optional
	FieldsEqual *ProbeFieldsEqualSpec `json:"fieldsEqual,omitempty"`
	// +optional
	CEL *ProbeCELSpec `json:"cel,omitempty"`
}

// ProbeConditionSpec passes when .status.conditions has Type with Status
// (and, if the object has observedGeneration there, of its generation).
type ProbeConditionSpec struct {
	// +kubebuilder:validation:MinLength=1
	Type string `json:"type"`
	// +kubebuilder:validation:MinLength=1
	Status string `json:"status"`
}

// ProbeFieldsEqualSpec passes when the two JSONPath-like fields (".spec.x")
// both exist and are equal.
type ProbeFieldsEqualSpec struct {
	// +kubebuilder:validation:Pattern=`^\.`
	FieldA string `json:"fieldA"`
	// +kubebuilder:validation:Pattern=`^\.`
	FieldB string `json:"fieldB"`
}

// ProbeCELSpec passes when Rule, evaluated with the object as self, is
// true; Message says what failed.
type ProbeCELSpec struct {
	// +kubebuilder:validation:MinLength=1
	Rule string `json:"rule"`
	// +kubebuilder:validation:MinLength=1
	Message string `json:"message"`
}

// AddonServiceAccountName is the ServiceAccount of an ObjectDeployment's
// namespace whose rights its management-side phases (no class) are
// applied with: the operator impersonates it.
const AddonServiceAccountName = "hypershift-addons"

// Condition types and reasons of ObjectDeployments and ObjectSets.
const (
	// ObjectsAvailable / Available: every phase is applied and passes.
	AddonAvailable   ConditionType = "Available"
	AddonProgressing ConditionType = "Progressing"
	AddonPaused      ConditionType = "Paused"

	AddonAvailableReason     ConditionReason = "Available"
	AddonProbeFailedReason   ConditionReason = "ProbeFailed"
	AddonCollisionReason     ConditionReason = "CollisionDetected"
	AddonApplyFailedReason   ConditionReason = "ApplyFailed"
	AddonNoPodsReason        ConditionReason = "ManagementPlaneRunsNoPods"
	AddonHostedClusterReason ConditionReason = "HostedClusterUnreachable"
	AddonUnsupportedReason   ConditionReason = "Unsupported"
	// AddonRevisionChangedReason: the newest ObjectSet was changed after
	// it was made from the template; it is not applied.
	AddonRevisionChangedReason ConditionReason = "RevisionChanged"
	AddonRolloutReason         ConditionReason = "RollingOut"
	AddonIdleReason            ConditionReason = "Idle"
	AddonPausedReason          ConditionReason = "Paused"
	AddonNotPausedReason       ConditionReason = "NotPaused"
	AddonSupersededReason      ConditionReason = "Superseded"
	AddonWaitingPreviousReason ConditionReason = "WaitingForPreviousPhase"
	// AddonInvalidSelectorReason: spec.selector does not select the
	// template's labels; no revision is made until it does.
	AddonInvalidSelectorReason ConditionReason = "InvalidSelector"
)

// ObjectDeploymentStatus is the observed state of an ObjectDeployment.
type ObjectDeploymentStatus struct {
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// CollisionCount is Package Operator's count of template-hash
	// collisions; revisions here are named by number, so it stays 0.
	// +optional
	CollisionCount int32 `json:"collisionCount,omitempty"`
	// TemplateHash is the hash of spec.template of the newest revision.
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`
	// Revision is the newest revision's number.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Holding names what holds the newest revision's rollout; empty when
	// it is Available.
	// +optional
	Holding *RolloutHold `json:"holding,omitempty"`
	// ControllerOf names the ObjectSets of this deployment.
	// +listType=atomic
	// +optional
	ControllerOf []ControlledObjectReference `json:"controllerOf,omitempty"`
}

// RolloutHold names the phase and object that hold a rollout and why.
type RolloutHold struct {
	Phase string `json:"phase"`
	// Object is "group/Kind namespace/name" (core group: "Kind ns/name").
	// +optional
	Object  string `json:"object,omitempty"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ControlledObjectReference names an object.
type ControlledObjectReference struct {
	Kind  string `json:"kind"`
	Group string `json:"group"`
	Name  string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
}

// +kubebuilder:object:root=true

// ObjectDeploymentList is a list of ObjectDeployments.
type ObjectDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ObjectDeployment `json:"items"`
}
