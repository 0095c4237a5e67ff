package nodepool

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/nodes/bootstrap"
)

// A bootstrap token lets whoever holds it ask for a node of its pool, so
// the controller keeps one only while a Simulated pool's agent runs — the
// pool has machines or wants some. None pools get theirs from `hypershift
// create join-command` only.

// retireAgent stops an idle Simulated pool's agent and deletes its tokens.
// A later scale-up makes a new token and starts the agent again.
func (r *Reconciler) retireAgent(ctx context.Context, s *scope) error {
	if err := s.platform.delete(ctx, s); err != nil {
		return err
	}
	return deleteTokens(ctx, s)
}

// deleteTokens deletes every bootstrap token of the pool.
func deleteTokens(ctx context.Context, s *scope) error {
	secrets, err := s.hosted.secrets.List(labels.SelectorFromSet(labels.Set{hypershiftv1alpha1.NodePoolLabel: s.np.Name}))
	if err != nil {
		return err
	}
	for _, secret := range secrets {
		if secret.Type != bootstrap.SecretType {
			continue
		}
		err := s.hosted.kube.CoreV1().Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete bootstrap token %s: %w", secret.Name, err)
		}
		s.log.Info("bootstrap token deleted", "secret", secret.Name)
	}
	return nil
}
