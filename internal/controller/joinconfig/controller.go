// Package joinconfig is Cluster API's bootstrap provider of hypershift:
// for each JoinConfig (cloned by Cluster API from a JoinConfigTemplate for
// one Machine) it issues a single-use bootstrap token of the config's
// NodePool in the hosted cluster of the Machine's Cluster, and writes the
// machine's first-boot userdata — `hypershift join` with that token, the
// CA pin and the pool's Kubernetes version — to a data Secret, as Cluster
// API's bootstrap contract (v1beta2) asks: status.dataSecretName and
// status.initialization.dataSecretCreated. The userdata differs between
// the pool's platforms only in where the node learns its name and provider
// ID (bootstrap.Userdata).
package joinconfig

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/capiref"
	"hypershift.dev/internal/controller/conditions"
	"hypershift.dev/internal/controller/lifecycle"
	"hypershift.dev/internal/nodes/bootstrap"
)

// Cluster API's names this controller reads and writes.
const (
	// ClusterNameLabel names a bootstrap config's (and its data Secret's)
	// Cluster.
	ClusterNameLabel = capiref.ClusterNameLabel
)

// DataSecretType is the type of a bootstrap data Secret.
const DataSecretType corev1.SecretType = "cluster.x-k8s.io/secret" //nolint:gosec // a Secret type, not a credential

const (
	defaultTokenTTL = time.Hour
	// waitRecheck is how soon a config waiting for its control plane
	// looks again (the Cluster is Cluster API's kind, not watched here).
	waitRecheck = 10 * time.Second
	// invalidRecheck is how soon an invalid config looks again: another
	// object (a NodePool, the Cluster) may make it valid.
	invalidRecheck = time.Minute
)

// Reconciler reconciles JoinConfigs.
type Reconciler struct {
	Client client.Client
	// APIReader reads the data Secret from the API server, not the cache,
	// before a token is issued: a Secret made by the pass before must be
	// found. Nil: Client.
	APIReader client.Reader
	// Now returns the time; nil means time.Now.
	Now func() time.Time
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&hypershiftv1alpha1.JoinConfig{}).
		Owns(&corev1.Secret{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	jc := &hypershiftv1alpha1.JoinConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, jc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !jc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the data Secret is owned: it goes with it
	}
	patch, err := lifecycle.NewStatusPatch(jc)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		jc.Status.ObservedGeneration = jc.Generation
		if err := patch.Apply(ctx, r.Client); err != nil && reterr == nil {
			reterr = err
		}
	}()
	return r.reconcile(ctx, jc)
}

// notReady says why the userdata is not made yet.
func notReady(jc *hypershiftv1alpha1.JoinConfig, reason hypershiftv1alpha1.ConditionReason, msg string) {
	conditions.Set(&jc.Status.Conditions, jc.Generation, hypershiftv1alpha1.JoinConfigReady, false, reason, msg)
}

func (r *Reconciler) reconcile(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig) (ctrl.Result, error) {
	if ptr.Deref(jc.Status.Initialization.DataSecretCreated, false) {
		return ctrl.Result{}, nil // made once: the token in it is single-use
	}
	if found, err := r.adoptSecret(ctx, jc); found || err != nil {
		return ctrl.Result{}, err
	}
	t, wait, err := r.resolve(ctx, jc)
	var invalid invalidError
	switch {
	case errors.As(err, &invalid):
		notReady(jc, hypershiftv1alpha1.InvalidJoinConfigReason, err.Error())
		return ctrl.Result{RequeueAfter: invalidRecheck}, nil
	case err != nil:
		return ctrl.Result{}, err
	case wait != nil:
		notReady(jc, wait.reason, wait.msg)
		return ctrl.Result{RequeueAfter: waitRecheck}, nil
	}
	userdata, tok, kc, err := r.issue(ctx, jc, t)
	if errors.As(err, &invalid) {
		notReady(jc, hypershiftv1alpha1.InvalidJoinConfigReason, err.Error())
		return ctrl.Result{RequeueAfter: invalidRecheck}, nil
	}
	if err != nil {
		r.revoke(ctx, kc, tok)
		return ctrl.Result{}, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: jc.Namespace, Name: jc.Name,
			Labels: map[string]string{ClusterNameLabel: t.cluster},
		},
		Type: DataSecretType,
		Data: map[string][]byte{"value": userdata, "format": []byte(bootstrap.UserdataFormat)},
	}
	if err := controllerutil.SetControllerReference(jc, secret, r.Client.Scheme()); err != nil {
		r.revoke(ctx, kc, tok)
		return ctrl.Result{}, err
	}
	if err := r.Client.Create(ctx, secret); err != nil {
		// Nobody gets this token: it goes. An existing Secret is adopted
		// (or refused) by the next pass.
		r.revoke(ctx, kc, tok)
		return ctrl.Result{}, fmt.Errorf("create the userdata Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	created(jc, secret.Name)
	ctrl.LoggerFrom(ctx).Info("userdata made", "secret", secret.Name, "nodePool", jc.Spec.NodePool, "cluster", t.cluster)
	return ctrl.Result{}, nil
}

// revoke deletes a token that was issued and not handed out (zero: none
// was issued); a failure is logged, and the token expires with its TTL.
func (r *Reconciler) revoke(ctx context.Context, kc []byte, tok bootstrap.Token) {
	if tok.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), issueTimeout)
	defer cancel()
	if err := bootstrap.RevokeToken(ctx, kc, tok); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "a bootstrap token that was not handed out could not be deleted; it expires with its TTL", "secret", tok.SecretName())
	}
}

// created records the data Secret in the status.
func created(jc *hypershiftv1alpha1.JoinConfig, name string) {
	jc.Status.DataSecretName = ptr.To(name)
	jc.Status.Initialization.DataSecretCreated = ptr.To(true)
	conditions.Set(&jc.Status.Conditions, jc.Generation, hypershiftv1alpha1.JoinConfigReady, true,
		hypershiftv1alpha1.DataSecretCreatedReason, fmt.Sprintf("The userdata is in Secret %s", name))
}

// adoptSecret records a data Secret this config made before its status
// said so (the status write was lost); a Secret of that name that is not
// this config's is refused, never overwritten.
func (r *Reconciler) adoptSecret(ctx context.Context, jc *hypershiftv1alpha1.JoinConfig) (bool, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	secret := &corev1.Secret{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: jc.Namespace, Name: jc.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	if ref := metav1.GetControllerOf(secret); ref == nil || ref.UID != jc.UID {
		notReady(jc, hypershiftv1alpha1.InvalidJoinConfigReason,
			fmt.Sprintf("Secret %s/%s exists and is not this JoinConfig's: it is not overwritten; delete it or rename the JoinConfig", secret.Namespace, secret.Name))
		return true, nil
	}
	created(jc, secret.Name)
	return true, nil
}
