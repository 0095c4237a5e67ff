package hostedcluster

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/oidcissuer"
	"hypershift.dev/internal/pki"
)

// The service-account issuer (docs/workload-identity.md): the cluster's
// API server signs tokens as spec.issuerURL with the key of its PKI —
// the user's own when spec.serviceAccountSigningKey names one — and, with
// spec.oidcPublishing, the operator publishes the discovery document and
// key set where relying parties outside the cluster fetch them.
const (
	// issuerRetry is how soon a failed publication is tried again.
	issuerRetry = 30 * time.Second
	// issuerResync rewrites published documents that have not changed:
	// a bucket emptied by hand, or restored from an old copy, is mended
	// within it.
	issuerResync = 30 * time.Minute
	// unpublishGiveUp is how long a deleted cluster waits for its
	// documents to be deleted before it goes without: a bucket gone or its
	// credentials revoked must not keep the cluster forever.
	unpublishGiveUp = 5 * time.Minute
	// OIDCDocumentsLeftReason is the reason of the Warning Event a deleted
	// cluster emits when its documents could not be deleted.
	OIDCDocumentsLeftReason = "OIDCDocumentsLeft"
)

// signingKey reads the key spec.serviceAccountSigningKey names, from the
// HostedCluster's own namespace; nil without one.
func (r *Reconciler) signingKey(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (*pki.KeyPair, error) {
	ref := hc.Spec.ServiceAccountSigningKey
	if ref == nil {
		return nil, nil //nolint:nilnil // the operator makes the key
	}
	field := "spec.serviceAccountSigningKey"
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fail(hypershiftv1alpha1.InvalidSigningKeyReason, "%s: Secret %s/%s does not exist", field, hc.Namespace, ref.Name)
		}
		return nil, fmt.Errorf("%s: read Secret %s/%s: %w", field, hc.Namespace, ref.Name, err)
	}
	data, ok := secret.Data[hypershiftv1alpha1.ServiceAccountSigningKeyKey]
	if !ok {
		return nil, fail(hypershiftv1alpha1.InvalidSigningKeyReason, "%s: Secret %s/%s has no data key %q", field, hc.Namespace, ref.Name, hypershiftv1alpha1.ServiceAccountSigningKeyKey)
	}
	kp, err := pki.ParseServiceAccountKey(data)
	if err != nil {
		return nil, fail(hypershiftv1alpha1.InvalidSigningKeyReason, "%s: Secret %s/%s: %w", field, hc.Namespace, ref.Name, err)
	}
	return &kp, nil
}

// newSigningKey is the key spec.serviceAccountSigningKey names when the
// PKI has no service-account key yet, read before anything of the PKI is
// made: without it, the cluster waits (a requeue) rather than signing with
// a key of its own that the user's cloud identities do not trust. A PKI
// that has its key (made before, or restored from an archive) needs none.
func (r *Reconciler) newSigningKey(ctx context.Context, s *scope, store pki.Store) (*pki.KeyPair, ctrl.Result, error) {
	if s.hc.Spec.ServiceAccountSigningKey == nil {
		return nil, ctrl.Result{}, nil
	}
	if _, ok, err := store.Get(pki.ServiceAccountKeyName); err != nil || ok {
		return nil, ctrl.Result{}, err
	}
	key, err := r.signingKey(ctx, s.hc)
	if ie := (*reasonedError)(nil); errors.As(err, &ie) {
		conditions.Set(&s.hc.Status.Conditions, s.hc.Generation, hypershiftv1alpha1.ValidOIDCConfiguration, false, ie.reason, ie.Error())
		return nil, ctrl.Result{RequeueAfter: issuerRetry}, nil
	}
	return key, ctrl.Result{}, err
}

// reconcileIssuer records the issuer and its key ids in the status and,
// with spec.oidcPublishing, publishes the documents. Until they are
// published once the control plane is not made: its API server would
// issue tokens nobody outside can verify yet.
//
// ValidOIDCConfiguration says, first, that a publication failed (it is
// retried), else that the signing key's Secret no longer holds the key
// the cluster signs with, else that all is well. It is set only for a
// cluster that publishes or brings its key.
func (r *Reconciler) reconcileIssuer(ctx context.Context, s *scope) (ctrl.Result, error) {
	hc := s.hc
	if s.pki == nil {
		return ctrl.Result{}, errors.New("the PKI phase has not run")
	}
	pubs, kids, err := trustedKeys(s.pki)
	if err != nil {
		return ctrl.Result{}, err
	}
	issuer := hc.Spec.IssuerURL
	if issuer == "" {
		issuer = components.DefaultIssuer
	}
	keyProblem, err := r.signingKeyProblem(ctx, hc, s.pki.ServiceAccountKey)
	if err != nil {
		return ctrl.Result{}, err
	}
	if hc.Spec.OIDCPublishing == nil {
		hc.Status.ServiceAccountIssuer = &hypershiftv1alpha1.ServiceAccountIssuerStatus{IssuerURL: issuer, KeyIDs: kids}
		if hc.Spec.ServiceAccountSigningKey != nil {
			setIssuerCondition(hc, keyProblem, hypershiftv1alpha1.AsExpectedReason, "The cluster signs tokens with the key of spec.serviceAccountSigningKey")
		}
		return ctrl.Result{}, nil
	}
	st := hc.Status.ServiceAccountIssuer
	if st == nil {
		st = &hypershiftv1alpha1.ServiceAccountIssuerStatus{}
	}
	storage := hc.Spec.OIDCPublishing.StorageURL
	current := st.IssuerURL == issuer && st.StorageURL == storage && slices.Equal(st.KeyIDs, kids) &&
		st.PublishedAt != nil && time.Since(st.PublishedAt.Time) < issuerResync && !publishFailed(hc)
	if !current {
		if err := r.publishIssuer(ctx, hc, issuer, pubs); err != nil {
			var ie *reasonedError
			if !errors.As(err, &ie) {
				return ctrl.Result{}, err
			}
			conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.ValidOIDCConfiguration, false, ie.reason, ie.Error())
			ctrl.LoggerFrom(ctx).Info("issuer documents not published", "storage", storage, "error", err.Error())
			if st.PublishedAt == nil {
				// Never published: no API server yet.
				return ctrl.Result{RequeueAfter: issuerRetry}, nil
			}
			s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: issuerRetry})
			return ctrl.Result{}, nil
		}
		now := metav1.Now()
		st = &hypershiftv1alpha1.ServiceAccountIssuerStatus{IssuerURL: issuer, KeyIDs: kids, StorageURL: storage, PublishedAt: &now}
		hc.Status.ServiceAccountIssuer = st
	}
	setIssuerCondition(hc, keyProblem, hypershiftv1alpha1.OIDCPublishedReason,
		fmt.Sprintf("Published the discovery document and key set (key ids %s) for issuer %s to %s", strings.Join(st.KeyIDs, ", "), issuer, storage))
	s.requeue = lifecycle.Soonest(s.requeue, ctrl.Result{RequeueAfter: time.Until(st.PublishedAt.Add(issuerResync)) + time.Second})
	return ctrl.Result{}, nil
}

// trustedKeys are the public keys the cluster's API servers verify tokens
// with (pki's ServiceAccountKeys: the next one is published before it
// signs, the previous one until every token it signed has expired), and
// their key ids.
func trustedKeys(cp *pki.ControlPlane) ([]crypto.PublicKey, []string, error) {
	var pubs []crypto.PublicKey
	var kids []string
	for _, kp := range cp.ServiceAccountKeys() {
		if len(kp.CertPEM) == 0 {
			continue // a PKI without its key yet
		}
		pub, err := pki.ServiceAccountPublicKey(kp.CertPEM)
		if err != nil {
			return nil, nil, fmt.Errorf("service-account key: %w", err)
		}
		kid, err := oidcissuer.KeyID(pub)
		if err != nil {
			return nil, nil, fmt.Errorf("service-account key: %w", err)
		}
		pubs, kids = append(pubs, pub), append(kids, kid)
	}
	if len(kids) == 0 {
		return nil, nil, errors.New("no service-account key")
	}
	return pubs, kids, nil
}

// publishFailed says whether the last publication failed.
func publishFailed(hc *hypershiftv1alpha1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.ValidOIDCConfiguration.String())
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == hypershiftv1alpha1.OIDCPublishFailedReason.String() || c.Reason == hypershiftv1alpha1.OIDCCredentialsMissingReason.String())
}

// setIssuerCondition sets ValidOIDCConfiguration: False with the signing
// key's problem, else True with reason and message.
func setIssuerCondition(hc *hypershiftv1alpha1.HostedCluster, keyProblem string, reason hypershiftv1alpha1.ConditionReason, message string) {
	if keyProblem != "" {
		conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.ValidOIDCConfiguration, false, hypershiftv1alpha1.InvalidSigningKeyReason, keyProblem)
		return
	}
	conditions.Set(&hc.Status.Conditions, hc.Generation, hypershiftv1alpha1.ValidOIDCConfiguration, true, reason, message)
}

// signingKeyProblem says what is wrong with spec.serviceAccountSigningKey
// now that the PKI holds key: its Secret gone or changed. The key is read
// once, when the PKI is made; the cluster keeps signing with it.
func (r *Reconciler) signingKeyProblem(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, key pki.KeyPair) (string, error) {
	if saKeyRotationOf(hc) != nil {
		return "", nil // a rotation replaced the key given, on purpose
	}
	given, err := r.signingKey(ctx, hc)
	var ie *reasonedError
	switch {
	case errors.As(err, &ie):
		return ie.Error() + "; the cluster keeps signing with the key it was made with", nil
	case err != nil:
		return "", err
	case given == nil || bytes.Equal(given.CertPEM, key.CertPEM):
		return "", nil
	}
	return fmt.Sprintf("spec.serviceAccountSigningKey: Secret %s/%s holds another key than the one the cluster signs with; the key is read once, when the cluster's PKI is made, and the cluster keeps signing with it",
		hc.Namespace, hc.Spec.ServiceAccountSigningKey.Name), nil
}

// publishIssuer writes the documents with the credentials of
// spec.oidcPublishing.credentialsSecret.
func (r *Reconciler) publishIssuer(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, issuer string, pubs []crypto.PublicKey) error {
	storage, creds, err := r.issuerStorage(ctx, hc)
	if err != nil {
		return err
	}
	if err := oidcissuer.Publish(ctx, storage, creds, issuer, pubs); err != nil {
		return fail(hypershiftv1alpha1.OIDCPublishFailedReason, "spec.oidcPublishing.storageURL: %w", err)
	}
	return nil
}

// issuerStorage is the storage URL, checked as archive URLs are (a
// file:// URL only inside the operator's file root, and never on the
// kube runtime), and its credentials.
func (r *Reconciler) issuerStorage(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (string, *backup.Credentials, error) {
	p := hc.Spec.OIDCPublishing
	storage := p.StorageURL
	for _, doc := range []string{oidcissuer.DiscoveryPath, oidcissuer.JWKSPath} {
		if err := backup.CheckArchiveURL(strings.TrimSuffix(storage, "/")+doc, r.BackupFileRoot, !r.capabilities().HostFiles); err != nil {
			return "", nil, fail(hypershiftv1alpha1.OIDCPublishFailedReason, "spec.oidcPublishing.storageURL: %w", err)
		}
	}
	if p.CredentialsSecret == nil {
		return storage, nil, nil
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: hc.Namespace, Name: p.CredentialsSecret.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil, fail(hypershiftv1alpha1.OIDCCredentialsMissingReason, "spec.oidcPublishing.credentialsSecret: Secret %s/%s does not exist", hc.Namespace, p.CredentialsSecret.Name)
		}
		return "", nil, fmt.Errorf("spec.oidcPublishing.credentialsSecret: %w", err)
	}
	creds, err := backup.CredentialsFrom(func(k string) string { return string(secret.Data[k]) })
	if err != nil {
		return "", nil, fail(hypershiftv1alpha1.OIDCCredentialsMissingReason, "spec.oidcPublishing.credentialsSecret %s/%s: %w", hc.Namespace, p.CredentialsSecret.Name, err)
	}
	return storage, creds, nil
}

// unpublishIssuer deletes a deleted cluster's documents unless
// spec.oidcPublishing.keepOnDelete; only what this operator published
// (status.serviceAccountIssuer.storageURL) is deleted. It reports done
// once they are gone, or once unpublishGiveUp has passed since the
// deletion (with a Warning Event naming what is left).
func (r *Reconciler) unpublishIssuer(ctx context.Context, s *scope) (bool, error) {
	hc := s.hc
	p, st := hc.Spec.OIDCPublishing, hc.Status.ServiceAccountIssuer
	if p == nil || p.KeepOnDelete || st == nil || st.StorageURL == "" || st.StorageURL != p.StorageURL {
		return true, nil
	}
	storage, creds, err := r.issuerStorage(ctx, hc)
	if err == nil {
		err = oidcissuer.Unpublish(ctx, storage, creds)
	}
	if err == nil {
		return true, nil
	}
	if time.Since(hc.DeletionTimestamp.Time) < unpublishGiveUp {
		ctrl.LoggerFrom(ctx).Info("issuer documents not deleted yet", "storage", st.StorageURL, "error", err.Error())
		return false, nil
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(hc, nil, corev1.EventTypeWarning, OIDCDocumentsLeftReason, "Delete",
			"The issuer documents at %s could not be deleted within %s and are left: %v", st.StorageURL, unpublishGiveUp, err)
	}
	return true, nil
}
