package backup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
)

// The client side of a hosted cluster's backup: the request the operator
// answers (an annotation naming a Secret with the key and the bucket's
// credentials), and the wait for its answer in the cluster's status.

// RequestSecretData is the request Secret's data: the key and the
// credentials of the URL's scheme from this process's environment (the
// operator uses them for this bucket only).
func RequestSecretData(rawURL string, key []byte) (map[string][]byte, error) {
	creds, err := CredentialsForURL(rawURL)
	if err != nil {
		return nil, err
	}
	data := creds.Data()
	data[KeySecretKey] = key
	return data, nil
}

// CredentialsForURL reads the credentials of rawURL's scheme from this
// process's environment.
func CredentialsForURL(rawURL string) (*Credentials, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("archive URL %q: %w", rawURL, err)
	}
	creds, err := CredentialsFromEnv(u.Scheme, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("environment: %w", err)
	}
	return creds, nil
}

// WriteRequestSecret creates or updates the Secret NAME-SUFFIX beside the
// cluster, owned by it, so it goes when the cluster goes.
func WriteRequestSecret(ctx context.Context, c client.Client, hc *hypershiftv1alpha1.HostedCluster, suffix string, data map[string][]byte) (string, error) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hc.Namespace, Name: hc.Name + "-" + suffix}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, secret, func() error {
		secret.Data = data
		return controllerutil.SetOwnerReference(hc, secret, c.Scheme())
	})
	if err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return secret.Name, nil
}

// NewClusterRequest writes the request Secret of a backup of hc to rawURL
// (see RequestSecretData) and returns the request naming it, and that
// request as the value of the backup request annotation.
func NewClusterRequest(ctx context.Context, c client.Client, hc *hypershiftv1alpha1.HostedCluster, rawURL string, key []byte) (hypershiftv1alpha1.BackupRequest, string, error) {
	data, err := RequestSecretData(rawURL, key)
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, "", err
	}
	secretName, err := WriteRequestSecret(ctx, c, hc, "backup", data)
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, "", err
	}
	req := hypershiftv1alpha1.BackupRequest{ID: newRequestID(), URL: rawURL, Secret: secretName}
	raw, err := json.Marshal(req) //nolint:gosec // names the Secret, holds none of it
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, "", err
	}
	return req, string(raw), nil
}

func newRequestID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return time.Now().UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b)
}

// RequestCluster asks the operator for one backup of the hosted cluster nn
// to rawURL, and returns the request.
func RequestCluster(ctx context.Context, c client.Client, nn client.ObjectKey, rawURL string, key []byte) (hypershiftv1alpha1.BackupRequest, error) {
	hc, err := clusterclient.Get(ctx, c, nn)
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, err
	}
	req, raw, err := NewClusterRequest(ctx, c, hc, rawURL, key)
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{hypershiftv1alpha1.BackupRequestAnnotation: raw}}})
	if err != nil {
		return hypershiftv1alpha1.BackupRequest{}, err
	}
	if err := c.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return hypershiftv1alpha1.BackupRequest{}, fmt.Errorf("request backup of %s: %w", nn, err)
	}
	return req, nil
}

// WaitCluster waits until the cluster's status answers request id.
func WaitCluster(ctx context.Context, c client.Client, nn client.ObjectKey, id string, timeout time.Duration) (*hypershiftv1alpha1.BackupRecord, error) {
	var rec *hypershiftv1alpha1.BackupRecord
	_, err := clusterclient.Poll(ctx, c, nn, timeout, nil, func(hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
		st := hc.Status.Backup
		switch {
		case st == nil:
			return false, nil
		case st.LastBackup != nil && st.LastBackup.RequestID == id:
			rec = st.LastBackup
			return true, nil
		case st.FailedRequestID == id:
			msg := "see `hypershift describe cluster`"
			if cond := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.BackupSucceeded.String()); cond != nil {
				msg = cond.Reason + ": " + cond.Message
			}
			return false, fmt.Errorf("backup of hosted cluster %s failed: %s", nn, msg)
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return nil, fmt.Errorf("backup %s of hosted cluster %s not done after %s: see the BackupSucceeded condition (`hypershift describe cluster %s -n %s`)", id, nn, timeout, nn.Name, nn.Namespace)
	}
	return rec, err
}
