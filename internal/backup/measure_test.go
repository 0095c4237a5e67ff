package backup

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	clientv3 "go.etcd.io/etcd/client/v3"
	"hypershift.dev/internal/testenv"
)

// TestMeasure10kKeys measures backup and restore of 10,000 etcd keys of
// 1 KiB each (about the size of a typical Kubernetes object) through file://.
// It reports figures, it asserts only that the restore is complete; run with
// HYPERSHIFT_BACKUP_MEASURE=1.
func TestMeasure10kKeys(t *testing.T) {
	if os.Getenv("HYPERSHIFT_BACKUP_MEASURE") == "" {
		t.Skip("set HYPERSHIFT_BACKUP_MEASURE=1 to measure")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p := newEtcdPKI(t)
	peer := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	m := RestoreMember{Name: "etcd-0", PeerURL: peer, InitialCluster: "etcd-0=" + peer, ClusterToken: "a"}
	endpoint := startEtcd(t, p, filepath.Join(t.TempDir(), "data"), m, testenv.FreePort(t))
	cli := etcdClient(t, p, endpoint)
	value := strings.Repeat("x", 1024)
	const keys = 10000
	for i := range keys {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/configmaps/ns/k%05d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	creds := EtcdTLS{CAPEM: p.ca.CertPEM, CertPEM: p.client.CertPEM, KeyPEM: p.client.KeyPEM}
	key := testKey(t, 3)
	archiveURL := "file://" + filepath.Join(t.TempDir(), "a.bak")

	start := time.Now()
	snap, _, err := Snapshot(ctx, []string{endpoint}, creds)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := (&Archive{Files: map[string][]byte{EtcdSnapshotEntry: snap}}).Encode(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, archiveURL, sealed, nil); err != nil {
		t.Fatal(err)
	}
	backupTime := time.Since(start)

	start = time.Now()
	stored, err := Read(ctx, archiveURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Decode(key, stored)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "restored")
	peer2 := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
	m2 := RestoreMember{Name: "etcd-0", PeerURL: peer2, InitialCluster: "etcd-0=" + peer2, ClusterToken: "a"}
	if err := RestoreDataDir(a.Files[EtcdSnapshotEntry], dataDir, m2); err != nil {
		t.Fatal(err)
	}
	restoreTime := time.Since(start)
	restored := etcdClient(t, p, startEtcd(t, p, dataDir, m2, testenv.FreePort(t)))
	resp, err := restored.Get(ctx, "/registry/", withPrefixCountOnly()...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != keys {
		t.Fatalf("restored %d keys, want %d", resp.Count, keys)
	}
	t.Logf("10000 keys x 1 KiB: snapshot %d bytes, archive %d bytes, backup (snapshot+encrypt+write) %v, restore (read+decrypt+etcdutl restore) %v",
		len(snap), len(sealed), backupTime.Round(time.Millisecond), restoreTime.Round(time.Millisecond))
}

func withPrefixCountOnly() []clientv3.OpOption {
	return []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()}
}

// TestMeasureTransfer measures writing and reading a 21 MB archive (the
// size of 10,000 ConfigMaps' backup) through each scheme's loopback
// server. Run with HYPERSHIFT_BACKUP_MEASURE=1.
func TestMeasureTransfer(t *testing.T) {
	if os.Getenv("HYPERSHIFT_BACKUP_MEASURE") == "" {
		t.Skip("set HYPERSHIFT_BACKUP_MEASURE=1 to measure")
	}
	data := make([]byte, 21<<20)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	s3backend := s3mem.New()
	if err := s3backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(s3backend).Server())
	t.Cleanup(s3.Close)
	stores := blobStores(t)
	for _, tc := range []struct {
		scheme, url string
		creds       *Credentials
	}{
		{"file", "file://" + filepath.Join(t.TempDir(), "a.bak"), nil},
		{"s3", "s3://backups/a.bak?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(s3.URL), &Credentials{AccessKeyID: "test", SecretAccessKey: "test"}},
		{"gs", stores["gs"].url("backups", "a.bak"), stores["gs"].creds},
		{"azblob", stores["azblob"].url("backups", "a.bak"), stores["azblob"].creds},
	} {
		start := time.Now()
		if err := Write(t.Context(), tc.url, data, tc.creds); err != nil {
			t.Fatal(err)
		}
		write := time.Since(start)
		start = time.Now()
		got, err := Read(t.Context(), tc.url, tc.creds)
		if err != nil {
			t.Fatal(err)
		}
		read := time.Since(start)
		if len(got) != len(data) {
			t.Fatalf("%s: read %d bytes, wrote %d", tc.scheme, len(got), len(data))
		}
		t.Logf("%s: %d bytes, write %v, read %v", tc.scheme, len(data), write.Round(time.Millisecond), read.Round(time.Millisecond))
	}
}
