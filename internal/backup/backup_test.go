package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
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
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/testenv"
)

func testKey(t *testing.T, fill byte) []byte {
	t.Helper()
	return bytes.Repeat([]byte{fill}, KeySize)
}

func TestArchiveRoundTripAndWrongKey(t *testing.T) {
	a := &Archive{
		Manifest: Manifest{Cluster: "clusters/a", Created: time.Unix(1, 0).UTC()},
		Files:    map[string][]byte{EtcdSnapshotEntry: []byte("snap"), SecretPrefix + "root-ca.json": []byte("{}")},
	}
	sealed, err := a.Encode(testKey(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("snap")) || bytes.Contains(sealed, []byte("root-ca")) {
		t.Fatal("archive holds plaintext")
	}
	got, err := Decode(testKey(t, 1), sealed)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Files[EtcdSnapshotEntry]) != "snap" || got.Manifest.Cluster != "clusters/a" || len(got.Manifest.Entries) != 2 {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := Decode(testKey(t, 2), sealed); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("wrong key: got %v, want ErrWrongKey", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := Decode(testKey(t, 1), sealed); !errors.Is(err, ErrWrongKey) {
		t.Fatalf("altered archive: got %v, want ErrWrongKey", err)
	}
	if _, err := Decode(testKey(t, 1), []byte("hello")); err == nil || !strings.Contains(err.Error(), "not a hypershift backup") {
		t.Fatalf("not an archive: got %v", err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	hexKey := filepath.Join(dir, "hex")
	if err := os.WriteFile(hexKey, []byte(strings.Repeat("ab", KeySize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := LoadKey(hexKey)
	if err != nil || len(key) != KeySize || key[0] != 0xab {
		t.Fatalf("hex key: %x, %v", key, err)
	}
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(short); err == nil || !strings.Contains(err.Error(), "--key-file") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := LoadKey(""); err == nil {
		t.Fatal("empty path accepted")
	}
}

func TestParseURL(t *testing.T) {
	for raw, want := range map[string]Location{
		"file:///var/b/a.bak":               {Bucket: "file:///var/b", Key: "a.bak"},
		"s3://bkt/x/a.bak?region=us-east-1": {Bucket: "s3://bkt?region=us-east-1", Key: "x/a.bak"},
		"gs://bkt/a":                        {Bucket: "gs://bkt", Key: "a"},
	} {
		got, err := ParseURL(raw)
		if err != nil || got != want {
			t.Errorf("ParseURL(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, bad := range []string{"/var/b/a.bak", "file:///var/b/", "s3://bkt", "s3://bkt/dir/", "file://rel"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}

// etcdPKI is a CA and the server and client key pairs of a test etcd.
type etcdPKI struct{ ca, server, client pki.KeyPair }

func newEtcdPKI(t *testing.T) etcdPKI {
	t.Helper()
	ca, err := pki.NewCA("etcd-ca")
	if err != nil {
		t.Fatal(err)
	}
	issue := func(req pki.CertRequest) pki.KeyPair {
		kp, err := pki.Issue(ca, req)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	return etcdPKI{
		ca:     ca,
		server: issue(pki.CertRequest{CommonName: "etcd", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true, Client: true}),
		client: issue(pki.CertRequest{CommonName: "etcd-client", Client: true}),
	}
}

// startEtcd runs a real one-member etcd on dataDir (restored or new) with
// TLS client auth, as a control plane's etcd runs.
func startEtcd(t *testing.T, p etcdPKI, dataDir string, m RestoreMember, clientPort int) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = dataDir
	cfg.InitialCluster = m.InitialCluster
	cfg.InitialClusterToken = m.ClusterToken
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	peer, _ := url.Parse(m.PeerURL)
	client, _ := url.Parse(fmt.Sprintf("https://127.0.0.1:%d", clientPort))
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenMetricsUrls = nil
	cfg.ClientTLSInfo.TrustedCAFile = write("ca.crt", p.ca.CertPEM)
	cfg.ClientTLSInfo.CertFile = write("server.crt", p.server.CertPEM)
	cfg.ClientTLSInfo.KeyFile = write("server.key", p.server.KeyPEM)
	cfg.ClientTLSInfo.ClientCertAuth = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("etcd did not become ready")
	}
	return client.String()
}

func etcdClient(t *testing.T, p etcdPKI, endpoint string) *clientv3.Client {
	t.Helper()
	tlsConfig, err := EtcdTLS{CAPEM: p.ca.CertPEM, CertPEM: p.client.CertPEM, KeyPEM: p.client.KeyPEM}.Config()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// TestSnapshotArchiveRestore writes keys into a real etcd, snapshots it,
// stores the encrypted archive through file:// and through an in-process S3
// server, reads it back, restores a new data dir from it and starts etcd on
// that: every key is there.
func TestSnapshotArchiveRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := newEtcdPKI(t)
	member := func() RestoreMember {
		peer := fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t))
		return RestoreMember{Name: "etcd-0", PeerURL: peer, InitialCluster: "etcd-0=" + peer, ClusterToken: "a"}
	}
	endpoint := startEtcd(t, p, filepath.Join(t.TempDir(), "data"), member(), testenv.FreePort(t))
	cli := etcdClient(t, p, endpoint)
	const keys = 100
	for i := range keys {
		if _, err := cli.Put(ctx, fmt.Sprintf("/registry/k%03d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	snap, version, err := Snapshot(ctx, []string{endpoint}, EtcdTLS{CAPEM: p.ca.CertPEM, CertPEM: p.client.CertPEM, KeyPEM: p.client.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if version == "" {
		t.Error("snapshot has no etcd version")
	}
	key := testKey(t, 7)
	a := &Archive{Manifest: Manifest{Cluster: "clusters/a", EtcdVersion: version}, Files: map[string][]byte{EtcdSnapshotEntry: snap}}
	sealed, err := a.Encode(key)
	if err != nil {
		t.Fatal(err)
	}

	// A real S3 protocol server in process (gofakes3), reached over HTTP
	// by gocloud.dev's s3blob driver.
	s3backend := s3mem.New()
	if err := s3backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	s3 := httptest.NewServer(gofakes3.New(s3backend).Server())
	t.Cleanup(s3.Close)
	// Credentials go to the bucket's own client, not the environment.
	creds := &Credentials{AccessKeyID: "test", SecretAccessKey: "test"}
	urls := map[string]string{
		"file": "file://" + filepath.Join(t.TempDir(), "a.bak"),
		"s3":   "s3://backups/clusters/a.bak?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(s3.URL),
	}
	for name, archiveURL := range urls {
		t.Run(name, func(t *testing.T) {
			if _, err := Read(ctx, archiveURL, creds); !errors.Is(err, ErrNotFound) {
				t.Fatalf("read before write: got %v, want ErrNotFound", err)
			}
			if err := Write(ctx, archiveURL, sealed, creds); err != nil {
				t.Fatal(err)
			}
			stored, err := Read(ctx, archiveURL, creds)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(key, stored)
			if err != nil {
				t.Fatal(err)
			}
			dataDir := filepath.Join(t.TempDir(), "restored")
			m := member()
			if err := RestoreDataDir(got.Files[EtcdSnapshotEntry], dataDir, m); err != nil {
				t.Fatal(err)
			}
			if err := RestoreDataDir(got.Files[EtcdSnapshotEntry], dataDir, m); err == nil {
				t.Fatal("restore over an existing data dir succeeded")
			}
			restored := etcdClient(t, p, startEtcd(t, p, dataDir, m, testenv.FreePort(t)))
			resp, err := restored.Get(ctx, "/registry/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != keys {
				t.Fatalf("restored etcd has %d keys, want %d", len(resp.Kvs), keys)
			}
			if string(resp.Kvs[42].Value) != "v42" {
				t.Fatalf("key 42 = %q", resp.Kvs[42].Value)
			}
		})
	}
}
