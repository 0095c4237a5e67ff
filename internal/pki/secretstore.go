package pki

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ErrMissing is returned by a read-only SecretStore for a key pair that does
// not exist yet.
var ErrMissing = errors.New("key pair does not exist yet")

// SecretStore keeps key pairs as kubernetes.io/tls Secrets in one namespace.
type SecretStore struct {
	Ctx       context.Context //nolint:containedctx // Store's methods are context-free
	Client    client.Client
	Namespace string
	// Labels are put on created Secrets.
	Labels map[string]string
	// ReadOnly stores refuse to create key pairs (Put returns ErrMissing):
	// only the owner of a PKI creates it.
	ReadOnly bool
	// VerifyOwner, when set, vets every Secret read: an error refuses it,
	// so a key pair that another owner left under the same name is never
	// handed out as this owner's.
	VerifyOwner func(*corev1.Secret) error
}

// Get implements Store.
func (s SecretStore) Get(name string) (KeyPair, bool, error) {
	secret := &corev1.Secret{}
	err := s.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		return KeyPair{}, false, nil
	}
	if err != nil {
		return KeyPair{}, false, err
	}
	if s.VerifyOwner != nil {
		if err := s.VerifyOwner(secret); err != nil {
			return KeyPair{}, false, err
		}
	}
	return KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}, true, nil
}

// Put implements Store. It creates, never overwrites: when two writers race,
// the loser fails and reads the winner's key pair on its next attempt.
func (s SecretStore) Put(name string, kp KeyPair) error {
	if s.ReadOnly {
		return fmt.Errorf("%s: %w", name, ErrMissing)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name, Labels: s.Labels},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM},
	}
	return s.Client.Create(s.Ctx, secret)
}

// Replace implements Store: it updates the existing Secret, so a renewal
// racing another writer fails on the resource version and is retried with
// what the winner stored.
func (s SecretStore) Replace(name string, kp KeyPair) error {
	if s.ReadOnly {
		return fmt.Errorf("%s: read-only store cannot renew", name)
	}
	secret := &corev1.Secret{}
	if err := s.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, secret); err != nil {
		return err
	}
	if s.VerifyOwner != nil {
		if err := s.VerifyOwner(secret); err != nil {
			return err
		}
	}
	secret.Data = map[string][]byte{corev1.TLSCertKey: kp.CertPEM, corev1.TLSPrivateKeyKey: kp.KeyPEM}
	return s.Client.Update(s.Ctx, secret)
}

// Delete implements Deleter; a key pair already gone is no error. Only a
// Secret of this owner is deleted.
func (s SecretStore) Delete(name string) error {
	if s.ReadOnly {
		return fmt.Errorf("%s: read-only store cannot delete", name)
	}
	secret := &corev1.Secret{}
	err := s.Client.Get(s.Ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if s.VerifyOwner != nil {
		if err := s.VerifyOwner(secret); err != nil {
			return err
		}
	}
	pre := client.Preconditions{UID: &secret.UID, ResourceVersion: &secret.ResourceVersion}
	return client.IgnoreNotFound(s.Client.Delete(s.Ctx, secret, pre))
}
