package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Annotations of a backup or restore request. Their values are JSON
// (BackupRequest, RestoreRequest); `hypershift backup cluster` and
// `hypershift restore cluster` write them.
const (
	// BackupRequestAnnotation on a HostedCluster asks the operator for one
	// backup. A new request ID asks again.
	BackupRequestAnnotation = "hypershift.dev/backup-request"
	// RestoreFromAnnotation on a HostedCluster (and, copied, on its
	// HostedControlPlane) says its PKI, encryption key and etcd data come
	// from an archive, before anything of the cluster first runs.
	RestoreFromAnnotation = "hypershift.dev/restore-from"
)

// BackupRequest is the value of BackupRequestAnnotation.
type BackupRequest struct {
	// ID tells requests apart; the status reports it when done.
	ID string `json:"id"`
	// URL is where the archive goes (a gocloud.dev/blob URL with the
	// object's key as its path).
	URL string `json:"url"`
	// Secret, in the HostedCluster's namespace, holds the archive key under
	// `key` and, for s3:// URLs, optional credentials (AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN) used for this bucket only.
	Secret string `json:"secret"`
}

// RestoreRequest is the value of RestoreFromAnnotation.
type RestoreRequest struct {
	// URL is the archive.
	URL string `json:"url"`
	// Secret, in the HostedCluster's namespace, as BackupRequest.Secret.
	Secret string `json:"secret"`
	// Namespace is the HostedCluster's namespace (set on the
	// HostedControlPlane's copy, which lives elsewhere).
	Namespace string `json:"namespace,omitempty"`
}

// BackupSucceeded says whether the last backup worked; when False its
// reason names what failed and its message the URL or field.
const BackupSucceeded ConditionType = "BackupSucceeded"

// Reasons of BackupSucceeded (and of a failed restore).
const (
	BackupCompletedReason            ConditionReason = "BackupCompleted"
	BucketUnavailableReason          ConditionReason = "BucketUnavailable"
	EncryptionKeyMissingReason       ConditionReason = "EncryptionKeyMissing"
	SnapshotFailedReason             ConditionReason = "SnapshotFailed"
	InvalidBackupRequestReason       ConditionReason = "InvalidBackupRequest"
	RestoreFailedReason              ConditionReason = "RestoreFailed"
	RestoreEndpointChangedReason     ConditionReason = "RestoreEndpointChanged"
	RestoreNotSupportedRuntimeReason ConditionReason = "RestoreNotSupportedByRuntime"
)

// Restored says whether a cluster marked for restore got its state from
// the archive.
const Restored ConditionType = "Restored"

// BackupStatus reports the cluster's backups.
type BackupStatus struct {
	// lastBackup is the last backup that succeeded.
	// +optional
	LastBackup *BackupRecord `json:"lastBackup,omitempty"`
	// failedRequestID is the ID of the last request that failed (the
	// BackupSucceeded condition says why).
	// +optional
	FailedRequestID string `json:"failedRequestID,omitempty"`
}

// BackupRecord is one archive written.
type BackupRecord struct {
	// url is where the archive is.
	URL string `json:"url"`
	// time is when the etcd snapshot was taken.
	Time metav1.Time `json:"time"`
	// sizeBytes is the archive's size.
	SizeBytes int64 `json:"sizeBytes"`
	// duration is how long the backup took (snapshot, encryption, upload).
	Duration metav1.Duration `json:"duration"`
	// requestID is the request the backup answered.
	// +optional
	RequestID string `json:"requestID,omitempty"`
}
