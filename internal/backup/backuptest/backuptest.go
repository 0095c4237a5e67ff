// Package backuptest makes backup archives of real etcd data for tests.
package backuptest

import (
	"context"
	"io"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"hypershift.dev/internal/backup"
)

// SealedSnapshot is an archive of cluster, sealed with key, whose etcd
// snapshot is the one cli's etcd takes now.
func SealedSnapshot(ctx context.Context, t testing.TB, cli *clientv3.Client, key []byte, cluster string) []byte {
	t.Helper()
	snap, err := cli.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(snap)
	_ = snap.Close()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := (&backup.Archive{
		Manifest: backup.Manifest{Cluster: cluster, Created: time.Now()},
		Files:    map[string][]byte{backup.EtcdSnapshotEntry: data},
	}).Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	return sealed
}
