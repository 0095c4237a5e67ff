package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceAccountSigningKeyKey is the data key of the Secret
// spec.serviceAccountSigningKey names: a PEM private key (RSA of at least
// 2048 bits, or ECDSA P-256 or P-384).
const ServiceAccountSigningKeyKey = "key"

// OIDCPublishingSpec says where the operator publishes a hosted cluster's
// OpenID discovery document and key set, for relying parties outside the
// cluster (a cloud's identity federation) to verify its service-account
// tokens.
type OIDCPublishingSpec struct {
	// storageURL is the bucket and path prefix the documents go to, a
	// gocloud.dev/blob URL as backups take (s3://, gs://, azblob://,
	// file://): PREFIX/.well-known/openid-configuration and
	// PREFIX/openid/v1/jwks. It must be served at spec.issuerURL, by the
	// bucket itself or a web server or CDN in front of it.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(s3|gs|azblob|file)://')",message="spec.oidcPublishing.storageURL must be an s3://, gs://, azblob:// or file:// URL"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.oidcPublishing.storageURL is immutable: the issuer is served from it"
	StorageURL string `json:"storageURL"`

	// credentialsSecret names a Secret in the HostedCluster's namespace
	// holding the bucket's credentials, under the keys backups take
	// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for s3://,
	// GOOGLE_APPLICATION_CREDENTIALS_JSON for gs://, AZURE_STORAGE_* for
	// azblob://). Without it, the bucket is opened anonymously, never with
	// the operator's own identity.
	//
	// +optional
	CredentialsSecret *corev1.LocalObjectReference `json:"credentialsSecret,omitempty"`

	// keepOnDelete keeps the published documents when the cluster is
	// deleted, so that a cluster recreated under the same issuer and
	// signing key keeps its cloud identities' trust without a gap.
	//
	// +optional
	KeepOnDelete bool `json:"keepOnDelete,omitempty"`
}

// ServiceAccountIssuerStatus is what the operator published of a hosted
// cluster's service-account issuer.
type ServiceAccountIssuerStatus struct {
	// issuerURL is the issuer the cluster's API server signs tokens as.
	IssuerURL string `json:"issuerURL"`
	// keyIDs are the key ids (the tokens' kid header) of the published key
	// set, as the API server computes them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	KeyIDs []string `json:"keyIDs,omitempty"`
	// storageURL is where the documents were last published.
	// +optional
	StorageURL string `json:"storageURL,omitempty"`
	// publishedAt is when the documents were last written.
	// +optional
	PublishedAt *metav1.Time `json:"publishedAt,omitempty"`
}

// ValidOIDCConfiguration says whether a HostedCluster's issuer documents
// are published where spec.oidcPublishing says (HyperShift's condition
// type); False names what failed: the bucket, its credentials or the
// signing key.
const ValidOIDCConfiguration ConditionType = "ValidOIDCConfiguration"

// Reasons of ValidOIDCConfiguration.
const (
	OIDCPublishedReason          ConditionReason = "Published"
	OIDCPublishFailedReason      ConditionReason = "PublishFailed"
	InvalidSigningKeyReason      ConditionReason = "InvalidSigningKey"
	OIDCCredentialsMissingReason ConditionReason = "CredentialsMissing"
)
