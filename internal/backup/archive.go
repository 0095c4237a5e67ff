// Package backup makes and reads a hosted cluster's backup archive: a
// consistent etcd snapshot, the cluster's PKI Secrets, its encryption key and
// its HostedCluster/NodePool specs, with a manifest of sizes and digests,
// encrypted with AES-256-GCM under a key the user holds, and stored through
// gocloud.dev/blob (file://, s3://, gs://, azblob://).
package backup

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// Names of the entries of an archive.
const (
	ManifestEntry      = "manifest.json"
	EtcdSnapshotEntry  = "etcd.snapshot"
	HostedClusterEntry = "hostedcluster.json"
	NodePoolsEntry     = "nodepools.json"
	EncryptionKeyEntry = "encryption-key"
	// SecretPrefix starts the entry of each PKI Secret: secrets/NAME.json.
	SecretPrefix = "secrets/"
)

// FormatVersion is the archive layout this package writes and reads.
const FormatVersion = 1

// Manifest describes an archive.
type Manifest struct {
	FormatVersion int       `json:"formatVersion"`
	Cluster       string    `json:"cluster"` // namespace/name
	UID           string    `json:"uid"`
	Created       time.Time `json:"created"`
	// HypershiftVersion and EtcdVersion are what made the archive.
	HypershiftVersion string `json:"hypershiftVersion"`
	EtcdVersion       string `json:"etcdVersion"`
	// KubernetesVersion is the hosted cluster's release.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Endpoint is the published API endpoint (host:port) the cluster had:
	// a restore keeps its port when it is free, so saved kubeconfigs work.
	Endpoint string  `json:"endpoint,omitempty"`
	Entries  []Entry `json:"entries"`
}

// Entry is one file of an archive.
type Entry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Archive is a decoded backup.
type Archive struct {
	Manifest Manifest
	Files    map[string][]byte
}

// Encode packs the archive as a tar (manifest first, then the entries in
// name order) and encrypts it under key. The manifest's entries are filled in.
func (a *Archive) Encode(key []byte) ([]byte, error) {
	names := make([]string, 0, len(a.Files))
	for name := range a.Files {
		names = append(names, name)
	}
	sort.Strings(names)
	a.Manifest.FormatVersion = FormatVersion
	a.Manifest.Entries = a.Manifest.Entries[:0]
	for _, name := range names {
		sum := sha256.Sum256(a.Files[name])
		a.Manifest.Entries = append(a.Manifest.Entries, Entry{Name: name, Size: int64(len(a.Files[name])), SHA256: hex.EncodeToString(sum[:])})
	}
	manifest, err := json.MarshalIndent(a.Manifest, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: a.Manifest.Created}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := write(ManifestEntry, manifest); err != nil {
		return nil, fmt.Errorf("pack %s: %w", ManifestEntry, err)
	}
	for _, name := range names {
		if err := write(name, a.Files[name]); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pack archive: %w", err)
	}
	return seal(key, buf.Bytes())
}

// Decode decrypts and unpacks an archive, checking every entry against the
// manifest (size and sha256) and that none is missing or extra.
func Decode(key, sealed []byte) (*Archive, error) {
	plain, err := open(key, sealed)
	if err != nil {
		return nil, err
	}
	a := &Archive{Files: map[string][]byte{}}
	tr := tar.NewReader(bytes.NewReader(plain))
	first := true
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("unpack archive: %w", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("unpack %s: %w", hdr.Name, err)
		}
		if first {
			if hdr.Name != ManifestEntry {
				return nil, fmt.Errorf("archive starts with %s, not %s", hdr.Name, ManifestEntry)
			}
			if err := json.Unmarshal(data, &a.Manifest); err != nil {
				return nil, fmt.Errorf("decode manifest: %w", err)
			}
			first = false
			continue
		}
		a.Files[hdr.Name] = data
	}
	if first {
		return nil, errors.New("archive is empty")
	}
	if a.Manifest.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("archive format %d: this hypershift reads format %d", a.Manifest.FormatVersion, FormatVersion)
	}
	if len(a.Manifest.Entries) != len(a.Files) {
		return nil, fmt.Errorf("archive has %d entries, its manifest lists %d", len(a.Files), len(a.Manifest.Entries))
	}
	for _, e := range a.Manifest.Entries {
		data, ok := a.Files[e.Name]
		if !ok {
			return nil, fmt.Errorf("archive lacks %s, listed in its manifest", e.Name)
		}
		sum := sha256.Sum256(data)
		if int64(len(data)) != e.Size || hex.EncodeToString(sum[:]) != e.SHA256 {
			return nil, fmt.Errorf("archive entry %s does not match its manifest (size or sha256)", e.Name)
		}
	}
	return a, nil
}
