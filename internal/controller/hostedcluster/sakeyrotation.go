package hostedcluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/oidcissuer"
	"hypershift.dev/internal/pki"
)

// A service-account key rotation (spec.certificates.rotateServiceAccountKey,
// docs/workload-identity.md) moves, each step held until its effect is seen
// on the running API servers:
//
//	TrustBoth    a new key is made (service-account-key-next); the API
//	             servers verify with both public keys and the published key
//	             set holds both; the old key signs.
//	SignWithNew  the new key signs (service-account-key); the old public key
//	             (service-account-key-previous) stays trusted and published
//	             until retireAt: the first token of the new key plus the
//	             longest a token lives.
//	Done         the old public key is gone from the API servers and the
//	             key set.

// DefaultServiceAccountKeyRetireAfter is how long the old public key of a
// rotation stays after the new key signs: every token it signed has
// expired by then (components.MaxTokenExpiration), with a margin for
// clocks.
const DefaultServiceAccountKeyRetireAfter = components.MaxTokenExpiration + 5*time.Minute

// saKeyRotationPoll is how often a rotation's effect is looked for.
const saKeyRotationPoll = 2 * time.Second

// ServiceAccountKeyRotationReason is the reason of a rotation's Events.
const ServiceAccountKeyRotationReason = "ServiceAccountKeyRotation"

func saKeyRotationOf(hc *hypershiftv1alpha1.HostedCluster) *hypershiftv1alpha1.ServiceAccountKeyRotationStatus {
	if hc.Status.Certificates == nil {
		return nil
	}
	return hc.Status.Certificates.ServiceAccountKeyRotation
}

func setSAKeyRotation(hc *hypershiftv1alpha1.HostedCluster, st *hypershiftv1alpha1.ServiceAccountKeyRotationStatus) {
	if hc.Status.Certificates == nil {
		hc.Status.Certificates = &hypershiftv1alpha1.CertificatesStatus{}
	}
	hc.Status.Certificates.ServiceAccountKeyRotation = st
}

// retireAfter is how long the old public key stays once the new one signs.
func (r *Reconciler) retireAfter() time.Duration {
	if r.ServiceAccountKeyRetireAfter > 0 {
		return r.ServiceAccountKeyRetireAfter
	}
	return DefaultServiceAccountKeyRetireAfter
}

// applySAKeyRotation starts a requested rotation and makes the PKI what
// the phase needs; it runs before the PKI phase, which loads it. Each
// step is idempotent: a reconcile that stops halfway is finished by the
// next.
func (r *Reconciler) applySAKeyRotation(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := saKeyRotationOf(s.hc)
	token := ""
	if c := s.hc.Spec.Certificates; c != nil {
		token = c.RotateServiceAccountKey
	}
	if token != "" && (st == nil || (st.Phase == hypershiftv1alpha1.SAKeyDone && st.Token != token)) {
		now := metav1.Now()
		st = &hypershiftv1alpha1.ServiceAccountKeyRotationStatus{Phase: hypershiftv1alpha1.SAKeyTrustBoth, Token: token, StartedAt: now, PhaseSince: now}
		setSAKeyRotation(s.hc, st)
		r.recordSAKeyRotation(ctx, s, st)
	}
	if st == nil {
		return ctrl.Result{}, nil
	}
	store := s.secretStore(ctx, r.Client, false)
	next, previous := pki.NextName(pki.ServiceAccountKeyName), pki.PreviousName(pki.ServiceAccountKeyName)
	switch st.Phase {
	case hypershiftv1alpha1.SAKeyTrustBoth:
		if _, ok, err := store.Get(next); err != nil || ok {
			return ctrl.Result{}, err
		}
		key, pub, err := pki.NewServiceAccountKey()
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, store.Put(next, pki.KeyPair{CertPEM: pub, KeyPEM: key})
	case hypershiftv1alpha1.SAKeySignWithNew:
		return ctrl.Result{}, promoteNextSAKey(store)
	case hypershiftv1alpha1.SAKeyDone:
		return ctrl.Result{}, store.Delete(previous)
	}
	return ctrl.Result{}, nil
}

// promoteNextSAKey makes the next key sign: previous ← the signing key's
// public half; signing ← next; next gone. A reconcile that stopped after
// the first or second step finds previous there and next still there, or
// next gone.
func promoteNextSAKey(store pki.SecretStore) error {
	next, previous := pki.NextName(pki.ServiceAccountKeyName), pki.PreviousName(pki.ServiceAccountKeyName)
	nextKey, ok, err := store.Get(next)
	if err != nil || !ok {
		return err
	}
	current, ok, err := store.Get(pki.ServiceAccountKeyName)
	if err != nil {
		return err
	}
	if ok && !bytes.Equal(current.CertPEM, nextKey.CertPEM) {
		if _, had, err := store.Get(previous); err != nil {
			return err
		} else if !had {
			if err := store.Put(previous, pki.KeyPair{CertPEM: current.CertPEM}); err != nil {
				return fmt.Errorf("service-account key rotation: %w", err)
			}
		}
		if err := store.Replace(pki.ServiceAccountKeyName, nextKey); err != nil {
			return fmt.Errorf("service-account key rotation: %w", err)
		}
	}
	return store.Delete(next)
}

// advanceSAKeyRotation moves a rotation to its next phase once the running
// cluster shows the effect of this one.
func (r *Reconciler) advanceSAKeyRotation(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := saKeyRotationOf(s.hc)
	if st == nil || st.Phase == hypershiftv1alpha1.SAKeyDone || s.pki == nil {
		return ctrl.Result{}, nil
	}
	waiting, err := r.observeSAKeyRotation(ctx, s, st)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("service-account key rotation %s: %w", st.Phase, err)
	}
	now := metav1.Now()
	next := *st
	switch {
	case waiting != "":
		next.Message = waiting
	case st.Phase == hypershiftv1alpha1.SAKeyTrustBoth:
		next.Phase, next.PhaseSince, next.Message = hypershiftv1alpha1.SAKeySignWithNew, now, ""
	case st.Phase == hypershiftv1alpha1.SAKeySignWithNew && st.RetireAt == nil:
		// The new key signs: every token of the old one is older.
		retire := metav1.NewTime(now.Add(r.retireAfter()))
		next.RetireAt = &retire
		next.Message = "every token of the old key to expire, at " + retire.UTC().Format(time.RFC3339)
	case st.Phase == hypershiftv1alpha1.SAKeySignWithNew && !now.Before(st.RetireAt):
		next.Phase, next.PhaseSince, next.CompletedAt, next.Message = hypershiftv1alpha1.SAKeyDone, now, &now, ""
	}
	setSAKeyRotation(s.hc, &next)
	if next.Phase != st.Phase {
		r.recordSAKeyRotation(ctx, s, &next)
		// The next phase's PKI change is made by the next reconcile.
		return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	poll := ctrl.Result{RequeueAfter: saKeyRotationPoll}
	if next.RetireAt != nil && waiting == "" {
		poll.RequeueAfter = max(time.Until(next.RetireAt.Time)+time.Second, saKeyRotationPoll)
	}
	s.requeue = lifecycle.Soonest(s.requeue, poll)
	return ctrl.Result{}, nil
}

// observeSAKeyRotation says what the phase still waits for ("" when its
// effect is seen): in TrustBoth, the API server's key set holding both
// keys and, for a cluster that publishes, the published one too; in
// SignWithNew, a new token signed by the new key.
func (r *Reconciler) observeSAKeyRotation(ctx context.Context, s *scope, st *hypershiftv1alpha1.ServiceAccountKeyRotationStatus) (string, error) {
	ep := s.hcp.Status.ControlPlaneEndpoint
	if ep.Port == 0 {
		return "the control plane's endpoint", nil
	}
	api := hostedAPI{addr: net.JoinHostPort(ep.Host, fmt.Sprint(ep.Port)), roots: s.pki.Bundle(pki.RootCAName)}
	_, want, err := trustedKeys(s.pki)
	if err != nil {
		return "", err
	}
	switch st.Phase {
	case hypershiftv1alpha1.SAKeyTrustBoth:
		if len(s.pki.ServiceAccountKeyNext.CertPEM) == 0 {
			return "the new key", nil
		}
		var set struct {
			Keys []struct {
				KID string `json:"kid"`
			} `json:"keys"`
		}
		if err := api.do(ctx, s.pki.Admin, "GET", oidcissuer.JWKSPath, nil, &set); err != nil {
			return "the API servers' key set: " + err.Error(), nil
		}
		var served []string
		for _, k := range set.Keys {
			served = append(served, k.KID)
		}
		for _, kid := range want {
			if !slices.Contains(served, kid) {
				return fmt.Sprintf("the API servers to trust key %s (they serve %s)", kid, strings.Join(served, ", ")), nil
			}
		}
		if s.hc.Spec.OIDCPublishing != nil {
			if is := s.hc.Status.ServiceAccountIssuer; is == nil || !slices.Equal(is.KeyIDs, want) || publishFailed(s.hc) {
				return "the key set with both keys to be published to " + s.hc.Spec.OIDCPublishing.StorageURL, nil
			}
		}
		return "", nil
	case hypershiftv1alpha1.SAKeySignWithNew:
		if len(s.pki.ServiceAccountKeyNext.CertPEM) > 0 {
			return "the new key to sign", nil
		}
		if st.RetireAt != nil {
			return "", nil
		}
		kid, err := api.newTokenKeyID(ctx, s.pki.Admin)
		if err != nil {
			return "a token of the new key: " + err.Error(), nil
		}
		if kid != want[0] {
			return fmt.Sprintf("the API servers to sign with key %s (a new token has %s)", want[0], kid), nil
		}
		return "", nil
	}
	return "", nil
}

// newTokenKeyID asks for a short token of kube-system's default
// ServiceAccount and returns the key id it was signed with. The token is
// not kept.
func (a hostedAPI) newTokenKeyID(ctx context.Context, admin pki.KeyPair) (string, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
		"spec": map[string]any{"audiences": []string{"hypershift-key-rotation"}, "expirationSeconds": 600},
	})
	if err != nil {
		return "", err
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	if err := a.do(ctx, admin, "POST", "/api/v1/namespaces/kube-system/serviceaccounts/default/token", body, &tr); err != nil {
		return "", err
	}
	header, _, ok := strings.Cut(tr.Status.Token, ".")
	if !ok {
		return "", errors.New("the token is not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(header)
	if err != nil {
		return "", fmt.Errorf("the token's header: %w", err)
	}
	var h struct {
		KID string `json:"kid"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", fmt.Errorf("the token's header: %w", err)
	}
	return h.KID, nil
}

func (r *Reconciler) recordSAKeyRotation(ctx context.Context, s *scope, st *hypershiftv1alpha1.ServiceAccountKeyRotationStatus) {
	ctrl.LoggerFrom(ctx).Info("service-account key rotation", "phase", st.Phase, "token", st.Token)
	if r.Recorder != nil {
		r.Recorder.Eventf(s.hc, nil, corev1.EventTypeNormal, ServiceAccountKeyRotationReason, string(st.Phase), "Service-account key rotation %s: phase %s", st.Token, st.Phase)
	}
}
