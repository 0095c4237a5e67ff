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

// WorkloadIdentityWebhookSpec runs, beside the control plane, a mutating
// admission webhook of the hosted cluster that gives pods of annotated
// ServiceAccounts what the Azure Workload Identity and the AWS pod
// identity webhooks give them: the environment and a projected token of
// the audience the cloud exchanges for credentials
// (docs/workload-identity.md). Its settings are those webhooks' own.
type WorkloadIdentityWebhookSpec struct {
	// azureTenantID is AZURE_TENANT_ID of Azure pods whose ServiceAccount
	// has no azure.workload.identity/tenant-id annotation.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9.-]+$')",message="spec.workloadIdentityWebhook.azureTenantID must be a tenant ID or domain, such as 72f988bf-86f1-41af-91ab-2d7cd011db47"
	AzureTenantID string `json:"azureTenantID,omitempty"`

	// azureAuthorityHost is AZURE_AUTHORITY_HOST, the Entra ID endpoint of
	// the cloud; empty: https://login.microsoftonline.com/.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https'",message="spec.workloadIdentityWebhook.azureAuthorityHost must be an https URL, such as https://login.microsoftonline.com/"
	AzureAuthorityHost string `json:"azureAuthorityHost,omitempty"`

	// awsRegion is AWS_REGION and AWS_DEFAULT_REGION of AWS pods; empty:
	// none set.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9-]+$')",message="spec.workloadIdentityWebhook.awsRegion must be a region name, such as eu-west-1"
	AWSRegion string `json:"awsRegion,omitempty"`

	// awsRegionalSTS sets AWS_STS_REGIONAL_ENDPOINTS=regional for AWS
	// pods whose ServiceAccount does not say otherwise.
	//
	// +optional
	AWSRegionalSTS bool `json:"awsRegionalSTS,omitempty"`
}
