package v1alpha1

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	// `key` and optional credentials of the URL's scheme (AWS_* for s3://,
	// GOOGLE_APPLICATION_CREDENTIALS_JSON for gs://, AZURE_STORAGE_* for
	// azblob://) used for this bucket only.
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

// RestoreRequestOf reads the restore request of an object's annotations
// (RestoreFromAnnotation); nil when there is none.
func RestoreRequestOf(annotations map[string]string) (*RestoreRequest, error) {
	raw, ok := annotations[RestoreFromAnnotation]
	if !ok {
		return nil, nil //nolint:nilnil // not restored
	}
	req := &RestoreRequest{}
	if err := json.Unmarshal([]byte(raw), req); err != nil || req.URL == "" || req.Secret == "" {
		return nil, fmt.Errorf("annotation %s: want {\"url\":…,\"secret\":…}, have %q", RestoreFromAnnotation, raw)
	}
	return req, nil
}

// BackupSucceeded says whether the last backup worked; when False its
// reason names what failed and its message the URL or field.
const BackupSucceeded ConditionType = "BackupSucceeded"

// Reasons of BackupSucceeded (and of a failed restore).
const (
	BackupCompletedReason        ConditionReason = "BackupCompleted"
	BucketUnavailableReason      ConditionReason = "BucketUnavailable"
	EncryptionKeyMissingReason   ConditionReason = "EncryptionKeyMissing"
	SnapshotFailedReason         ConditionReason = "SnapshotFailed"
	InvalidBackupRequestReason   ConditionReason = "InvalidBackupRequest"
	InvalidBackupScheduleReason  ConditionReason = "InvalidBackupSchedule"
	RestoreFailedReason          ConditionReason = "RestoreFailed"
	RestoreEndpointChangedReason ConditionReason = "RestoreEndpointChanged"
)

// Restored says whether a cluster marked for restore got its state from
// the archive.
const Restored ConditionType = "Restored"

// BackupSpec asks for scheduled backups, with retention.
type BackupSpec struct {
	// schedule is when backups run: a 5-field cron expression, such as
	// '0 3 * * *', or @daily.
	//
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+\\\\s+\\\\S+)$')",message="spec.backup.schedule must be a 5-field cron expression such as '0 3 * * *', or @daily"
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone the schedule is read in; UTC when
	// empty.
	//
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$')",message="spec.backup.timeZone must be an IANA time zone name such as UTC or Europe/Berlin"
	// +optional
	TimeZone string `json:"timeZone,omitempty"`

	// url is where scheduled archives go: a directory (file:///var/backups)
	// or a bucket with an optional key prefix (s3://bucket/prefix?region=…,
	// gs://bucket/prefix, azblob://container/prefix).
	// Each archive is named UID-TIME.bak, UID being the cluster's.
	//
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(file:///|(s3|gs|azblob)://[^/?]+)')",message="spec.backup.url must be file:///directory or s3://, gs:// or azblob://bucket[/prefix][?options]: the schemes compiled into hypershift"
	URL string `json:"url"`

	// keep is how many of this cluster's scheduled archives are kept under
	// url; older ones are deleted after each successful backup.
	//
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Keep int32 `json:"keep,omitempty"`

	// encryptionKeySecret names the Secret, in the HostedCluster's
	// namespace, whose data key `key` holds the 32-byte archive key.
	EncryptionKeySecret SecretReference `json:"encryptionKeySecret"`

	// credentialsSecret names a Secret, in the HostedCluster's namespace,
	// with the bucket's credentials, used for this bucket only: for s3://
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (optional
	// AWS_SESSION_TOKEN); for gs:// GOOGLE_APPLICATION_CREDENTIALS_JSON (a
	// service-account key; without it, anonymous); for azblob://
	// AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN.
	// +optional
	CredentialsSecret *SecretReference `json:"credentialsSecret,omitempty"`
}

// SecretReference names a Secret in the referrer's namespace.
type SecretReference struct {
	// name of the Secret.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// BackupStatus reports the cluster's backups.
type BackupStatus struct {
	// lastScheduleTime is the scheduled time of the last scheduled backup
	// run (successful or not).
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// nextScheduleTime is when the next scheduled backup runs.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

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
