package backup

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// KeySize is the size of an archive key: AES-256.
const KeySize = 32

// magic starts every archive: the format and its version, so a file that is
// not an archive is told apart from one the key does not open.
var magic = []byte("HSBACKUP1\n")

// ErrWrongKey says the key does not open the archive (or the archive was
// altered): AES-GCM cannot tell the two apart.
var ErrWrongKey = errors.New("the key does not open this archive (wrong --key-file, or the archive was altered)")

// LoadKey reads an archive key from path: 32 raw bytes, or 64 hex digits
// (a trailing newline allowed), as `head -c 32 /dev/urandom` or
// `openssl rand -hex 32` make.
func LoadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("--key-file is required: a file of 32 random bytes or 64 hex digits (`openssl rand -hex 32 > key`)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key-file: %w", err)
	}
	if len(data) == KeySize {
		return data, nil
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 2*KeySize {
		key := make([]byte, KeySize)
		if _, err := hex.Decode(key, trimmed); err == nil {
			return key, nil
		}
	}
	return nil, fmt.Errorf("--key-file %s: want 32 raw bytes or 64 hex digits, have %d bytes: make one with `openssl rand -hex 32 > %s`", path, len(data), path)
}

// seal encrypts plain with AES-256-GCM under key: magic, nonce, ciphertext.
// The magic is authenticated too.
func seal(key, plain []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	out := make([]byte, 0, len(magic)+len(nonce)+len(plain)+aead.Overhead())
	out = append(out, magic...)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plain, magic), nil
}

// open reverses seal.
func open(key, sealed []byte) ([]byte, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(sealed, magic) {
		return nil, errors.New("not a hypershift backup archive (no HSBACKUP1 header)")
	}
	rest := sealed[len(magic):]
	if len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("archive is truncated")
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], magic)
	if err != nil {
		return nil, ErrWrongKey
	}
	return plain, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("archive key: want %d bytes, have %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("archive key: %w", err)
	}
	return cipher.NewGCM(block)
}
