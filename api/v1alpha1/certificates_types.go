package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CertificatesSpec asks for certificate operations on a hosted cluster
// (docs/security.md). Validity periods are the operator's flags, not
// per-cluster settings.
type CertificatesSpec struct {
	// rotateCA starts a rotation of the cluster's root certificate
	// authorities when it changes to a value not yet rotated for: any
	// token, such as a date. A change while a rotation runs is taken up
	// once it is Done. `hypershift rotate ca` sets it.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.:]*[A-Za-z0-9])?$')",message="spec.certificates.rotateCA must be a token of letters, digits, '-', '_', '.' and ':' such as 2026-11-24T10.00"
	RotateCA string `json:"rotateCA,omitempty"`

	// rotateServiceAccountKey starts a rotation of the key the cluster
	// signs service-account tokens with when it changes to a value not
	// yet rotated for: the new public key is trusted and published first,
	// then signs, and the old one is retired once every token it signed
	// has expired (docs/workload-identity.md). `hypershift rotate
	// service-account-key` sets it.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.:]*[A-Za-z0-9])?$')",message="spec.certificates.rotateServiceAccountKey must be a token of letters, digits, '-', '_', '.' and ':' such as 2026-12-01T10.00"
	RotateServiceAccountKey string `json:"rotateServiceAccountKey,omitempty"`
}

// ServiceAccountKeyRotationPhase is a step of a service-account key
// rotation.
type ServiceAccountKeyRotationPhase string

// The phases of a service-account key rotation, in order.
const (
	// SAKeyTrustBoth: the new key exists; the API servers verify tokens
	// of both and the published key set holds both; the old key signs.
	SAKeyTrustBoth ServiceAccountKeyRotationPhase = "TrustBoth"
	// SAKeySignWithNew: the new key signs; the old public key is still
	// trusted and published until retireAt, when every token it signed
	// has expired.
	SAKeySignWithNew ServiceAccountKeyRotationPhase = "SignWithNew"
	// SAKeyDone: the old public key is retired.
	SAKeyDone ServiceAccountKeyRotationPhase = "Done"
)

// ServiceAccountKeyRotationStatus is the progress of the last
// service-account key rotation.
type ServiceAccountKeyRotationStatus struct {
	// phase is the step the rotation is in.
	Phase ServiceAccountKeyRotationPhase `json:"phase"`
	// token is the spec.certificates.rotateServiceAccountKey value this
	// rotation is for.
	Token string `json:"token"`
	// startedAt is when the rotation began.
	StartedAt metav1.Time `json:"startedAt"`
	// phaseSince is when the rotation entered its phase.
	PhaseSince metav1.Time `json:"phaseSince"`
	// retireAt is when the old public key goes: the new key's first
	// signature plus the longest a token lives.
	// +optional
	RetireAt *metav1.Time `json:"retireAt,omitempty"`
	// completedAt is when the rotation reached Done.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// message says what the phase waits for.
	// +optional
	Message string `json:"message,omitempty"`
}

// Annotations a node's agent puts on its Node once it applied a CA bundle
// (docs/security.md, "CA rotation"); the rotation's DistributeBundle phase
// waits for them on every Node.
const (
	// NodeTrustedRootCAsAnnotation lists, comma-separated, the
	// "sha256:<hex>" public-key hashes of the root CAs the node verifies the
	// API server with.
	NodeTrustedRootCAsAnnotation = "hypershift.dev/trusted-root-cas"
	// NodeTrustedClientCAsAnnotation lists the public-key hashes of the
	// client CAs the node's kubelet accepts the API server's calls with.
	NodeTrustedClientCAsAnnotation = "hypershift.dev/trusted-client-cas"
	// NodeClientCAAnnotation is the public-key hash of the CA that signed
	// the node's client certificate.
	NodeClientCAAnnotation = "hypershift.dev/client-certificate-ca"
)

// CARotationPhase is a step of a root-CA rotation. Each is held until its
// effect is observed on the running control plane and nodes.
type CARotationPhase string

// The phases of a root-CA rotation, in order.
const (
	// CARotationTrustBoth: new CAs exist; every trust bundle holds the old
	// and the new CA; leaves are still signed by the old ones.
	CARotationTrustBoth CARotationPhase = "TrustBoth"
	// CARotationReissueLeaves: the new CAs sign; every leaf is reissued
	// from them; the old CAs are still trusted.
	CARotationReissueLeaves CARotationPhase = "ReissueLeaves"
	// CARotationDistributeBundle: nodes take the new bundle and client
	// certificates from the new CA.
	CARotationDistributeBundle CARotationPhase = "DistributeBundle"
	// CARotationDropOld: bundles hold only the new CAs; the old CAs' keys
	// are deleted and what they signed is refused.
	CARotationDropOld CARotationPhase = "DropOld"
	// CARotationDone: the rotation finished.
	CARotationDone CARotationPhase = "Done"
)

// CARotationStatus is the progress of the last root-CA rotation.
type CARotationStatus struct {
	// phase is the step the rotation is in.
	Phase CARotationPhase `json:"phase"`
	// token is the spec.certificates.rotateCA value this rotation is for.
	Token string `json:"token"`
	// startedAt is when the rotation began.
	StartedAt metav1.Time `json:"startedAt"`
	// phaseSince is when the rotation entered its phase.
	PhaseSince metav1.Time `json:"phaseSince"`
	// completedAt is when the rotation reached Done.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// message says what the phase waits for.
	// +optional
	Message string `json:"message,omitempty"`
}

// CertificateAuthorityStatus is one CA of the cluster as stored.
type CertificateAuthorityStatus struct {
	// name is the CA's Secret name in the control-plane namespace.
	Name string `json:"name"`
	// notAfter is when the CA that signs expires.
	NotAfter metav1.Time `json:"notAfter"`
}

// CertificatesStatus is the state of a hosted cluster's certificates.
type CertificatesStatus struct {
	// caRotation is the last root-CA rotation; absent before the first.
	// +optional
	CARotation *CARotationStatus `json:"caRotation,omitempty"`
	// serviceAccountKeyRotation is the last service-account key rotation;
	// absent before the first.
	// +optional
	ServiceAccountKeyRotation *ServiceAccountKeyRotationStatus `json:"serviceAccountKeyRotation,omitempty"`
	// authorities are the cluster's CAs and their expiry.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=20
	Authorities []CertificateAuthorityStatus `json:"authorities,omitempty"`
}
