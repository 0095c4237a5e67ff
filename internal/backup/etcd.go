package backup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// EtcdTLS is how a backup reaches etcd: the etcd CA and a client key pair.
type EtcdTLS struct {
	CAPEM, CertPEM, KeyPEM []byte
}

// Config builds the client TLS config in memory: etcd's transport.TLSInfo
// would read the files at every handshake, and these are never on disk.
func (t EtcdTLS) Config() (*tls.Config, error) {
	cert, err := tls.X509KeyPair(t.CertPEM, t.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("etcd client key pair: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(t.CAPEM) {
		return nil, errors.New("etcd CA: no PEM certificate")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Snapshot takes a consistent snapshot of etcd through its maintenance API
// (the member's backend at one revision, not a copy of its files) and
// returns it with the member's etcd version.
func Snapshot(ctx context.Context, endpoints []string, creds EtcdTLS) (data []byte, version string, err error) {
	tlsConfig, err := creds.Config()
	if err != nil {
		return nil, "", fmt.Errorf("etcd client TLS: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, TLS: tlsConfig, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, "", fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	defer cli.Close()
	resp, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("etcd snapshot from %v: %w", endpoints, err)
	}
	defer resp.Snapshot.Close()
	data, err = io.ReadAll(resp.Snapshot)
	if err != nil {
		return nil, "", fmt.Errorf("read etcd snapshot: %w", err)
	}
	return data, resp.Version, nil
}

// RestoreMember is one member of the etcd cluster a snapshot is restored
// into: the member's --name and --initial-* flags, which the restored data
// dir must agree with.
type RestoreMember struct {
	Name           string
	PeerURL        string
	InitialCluster string
	ClusterToken   string
}

// RestoreDataDir makes dataDir, which must not exist, from snapshot data,
// for member m (etcdutl's snapshot restore). It is written next to dataDir
// and renamed into place, so a failure leaves no data dir behind.
func RestoreDataDir(data []byte, dataDir string, m RestoreMember) error {
	if _, err := os.Stat(dataDir); err == nil {
		return fmt.Errorf("etcd data dir %s exists: a restore does not overwrite it", dataDir)
	}
	parent := filepath.Dir(dataDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return err
	}
	work, err := os.MkdirTemp(parent, ".restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	snapPath := filepath.Join(work, "snapshot.db")
	if err := os.WriteFile(snapPath, data, 0o600); err != nil {
		return err
	}
	out := filepath.Join(work, "data")
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        snapPath,
		Name:                m.Name,
		OutputDataDir:       out,
		PeerURLs:            []string{m.PeerURL},
		InitialCluster:      m.InitialCluster,
		InitialClusterToken: m.ClusterToken,
	})
	if err != nil {
		return fmt.Errorf("restore etcd snapshot into %s: %w", dataDir, err)
	}
	if err := os.Rename(out, dataDir); err != nil {
		return fmt.Errorf("move restored etcd data to %s: %w", dataDir, err)
	}
	return nil
}
