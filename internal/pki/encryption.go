package pki

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"hypershift.dev/internal/atomicfile"
)

// EncryptionKeyName names a control plane's key for Secrets at rest.
const EncryptionKeyName = "etcd-encryption-key"

// NewEncryptionKey returns a random 32-byte key.
func NewEncryptionKey() ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generate encryption key: %w", err)
	}
	return key, nil
}

// EnsureEncryptionKeyFile loads the key in dir, creating it (0600) first if
// it is missing.
func EnsureEncryptionKeyFile(dir string) ([]byte, error) {
	path := filepath.Join(dir, EncryptionKeyName)
	key, err := os.ReadFile(path)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if key, err = NewEncryptionKey(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return key, atomicfile.Write(path, key, 0o600)
}
