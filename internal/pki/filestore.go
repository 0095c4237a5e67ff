package pki

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"hypershift.dev/internal/atomicfile"
)

// FileStore keeps key pairs as NAME.crt and NAME.key files in a directory
// (0700), keys readable by the owner only (0600).
type FileStore struct {
	Dir string
}

// Get implements Store.
func (s FileStore) Get(name string) (KeyPair, bool, error) {
	crt, err := os.ReadFile(filepath.Join(s.Dir, name+".crt"))
	if errors.Is(err, os.ErrNotExist) {
		return KeyPair{}, false, nil
	}
	if err != nil {
		return KeyPair{}, false, err
	}
	key, err := os.ReadFile(filepath.Join(s.Dir, name+".key"))
	if errors.Is(err, os.ErrNotExist) {
		return KeyPair{}, false, nil
	}
	if err != nil {
		return KeyPair{}, false, err
	}
	return KeyPair{CertPEM: crt, KeyPEM: key}, true, nil
}

// Put implements Store. The key is written before the certificate, so a
// crash in between leaves the pair absent rather than half present.
func (s FileStore) Put(name string, kp KeyPair) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	if err := atomicfile.Write(filepath.Join(s.Dir, name+".key"), kp.KeyPEM, 0o600); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.Dir, name+".crt"), kp.CertPEM, 0o600)
}

// Replace implements Store: the files are replaced atomically, the key
// first, so a reader sees the old pair, the new one, or (between the two
// renames, briefly) the new key with the old certificate — never a torn file.
func (s FileStore) Replace(name string, kp KeyPair) error { return s.Put(name, kp) }

// Delete implements Deleter: the key first, so a crash in between leaves
// a pair that Get reports as absent.
func (s FileStore) Delete(name string) error {
	for _, ext := range []string{".key", ".crt"} {
		if err := os.Remove(filepath.Join(s.Dir, name+ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
