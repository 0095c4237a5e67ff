package backup

import (
	"context"
	"fmt"
	"time"
)

// KeySecretKey is the data key of the archive key in a request's Secret.
const KeySecretKey = "key"

// FromSecretData reads a request Secret's data: the archive key under
// KeySecretKey and optional bucket credentials (see Credentials).
func FromSecretData(data map[string][]byte) ([]byte, *Credentials, error) {
	key := data[KeySecretKey]
	if len(key) != KeySize {
		return nil, nil, fmt.Errorf("data key %q must hold a %d-byte archive key, has %d bytes", KeySecretKey, KeySize, len(key))
	}
	creds, err := CredentialsFrom(func(k string) string { return string(data[k]) })
	if err != nil {
		return nil, nil, err
	}
	return key, creds, nil
}

// FetchTimeout bounds the operator's read of one archive: 2 GiB at a few
// megabytes a second. A bucket that trickles is given up on then.
const FetchTimeout = 10 * time.Minute

// Fetch reads, decrypts and verifies the archive at url.
func Fetch(ctx context.Context, url string, key []byte, creds *Credentials) (*Archive, error) {
	sealed, err := Read(ctx, url, creds)
	if err != nil {
		return nil, err
	}
	a, err := Decode(key, sealed)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", url, err)
	}
	return a, nil
}
