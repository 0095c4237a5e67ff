package restore

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/backup/backuptest"
	"hypershift.dev/internal/testenv"
)

// TestRestoreEtcdDataLeavesDataAlone: the restore step restores nothing
// when its files are gone (the restore is done) or the member has data
// already (it never reads the archive then), and refuses arguments that
// do not name the member. The restore itself is exercised end to end by
// TestKubeRuntime and TestBackupRestore.
func TestRestoreEtcdDataLeavesDataAlone(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	args := []string{
		"--name=etcd-0", "--data-dir=" + dataDir,
		"--initial-advertise-peer-urls=https://etcd-0.etcd-discovery.ns.svc:2380",
		"--initial-cluster=etcd-0=https://etcd-0.etcd-discovery.ns.svc:2380", "--initial-cluster-token=ns",
	}
	secretDir := filepath.Join(dir, "restore")
	if err := os.MkdirAll(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}

	msg, err := Member(t.Context(), secretDir, args)
	if err != nil || !strings.Contains(msg, "nothing to restore") {
		t.Errorf("without a restore Secret: %q, %v; want nothing to restore", msg, err)
	}

	// The archive does not exist: reading it would fail.
	writeFile(t, filepath.Join(secretDir, "url"), "file://"+filepath.Join(dir, "missing.bak"))
	writeFile(t, filepath.Join(secretDir, "key"), strings.Repeat("k", 32))
	writeFile(t, filepath.Join(secretDir, "file-root"), dir)
	if err := os.MkdirAll(filepath.Join(dataDir, "member", "snap"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dataDir, "member", "snap", "db"), "etcd's own data")
	msg, err = Member(t.Context(), secretDir, args)
	if err != nil || !strings.Contains(msg, "holds data already") {
		t.Errorf("over a member's data: %q, %v; want it left alone", msg, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dataDir, "member", "snap", "db")); string(data) != "etcd's own data" {
		t.Errorf("the member's data changed: %q", data)
	}

	// An empty data dir (a new volume): the archive is read, and its
	// absence is the error.
	if err := os.RemoveAll(filepath.Join(dataDir, "member")); err != nil {
		t.Fatal(err)
	}
	if _, err := Member(t.Context(), secretDir, args); err == nil || !strings.Contains(err.Error(), "missing.bak") {
		t.Errorf("an empty data dir and a missing archive: %v, want an error naming the archive", err)
	}
	// file:// only under the root the files name, and not at all without
	// one (in pods).
	writeFile(t, filepath.Join(secretDir, "file-root"), filepath.Join(dir, "elsewhere"))
	if _, err := Member(t.Context(), secretDir, args); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("an archive outside the file root: %v, want it refused naming the root", err)
	}
	if err := os.Remove(filepath.Join(secretDir, "file-root")); err != nil {
		t.Fatal(err)
	}
	if _, err := Member(t.Context(), secretDir, args); err == nil || !strings.Contains(err.Error(), "file:// names a path in the operator's pod") {
		t.Errorf("a file:// archive without a file root: %v, want it refused", err)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Errorf("a failed restore left %v in the data dir", entries)
	}

	if _, err := Member(t.Context(), secretDir, args[:1]); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("arguments without a data dir: %v, want an error naming the flags", err)
	}
	if _, err := Member(t.Context(), "", args); err == nil || !strings.Contains(err.Error(), "directory of the restore's files") {
		t.Errorf("no --from-dir: %v", err)
	}
}

// TestReadSecretDir: a mounted Secret's keys, without the kubelet's own
// entries.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "..2026_11_24", "key"), "k")
	if err := os.Symlink("..2026_11_24", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "key"), filepath.Join(dir, "key")); err != nil {
		t.Fatal(err)
	}
	data, err := readDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1 || string(data["key"]) != "k" {
		t.Errorf("readDir = %v, want only key=k", data)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreEtcdDataIntoAVolume: a snapshot of a real etcd, archived
// through file://, is restored into an existing empty data dir (a
// volume's mount point, which cannot be replaced); etcd started on it
// serves the key written before the snapshot, and a second run leaves the
// data alone.
func TestRestoreEtcdDataIntoAVolume(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	peer := "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	args := []string{"--name=etcd-0", "--initial-advertise-peer-urls=" + peer, "--initial-cluster=etcd-0=" + peer, "--initial-cluster-token=clusters-a"}

	source, stopSource := startPlainEtcd(t, filepath.Join(t.TempDir(), "source"), peer)
	cli := plainEtcdClient(t, source)
	if _, err := cli.Put(ctx, "/registry/configmaps/default/kept", "v"); err != nil {
		t.Fatal(err)
	}
	key := []byte(strings.Repeat("k", 32))
	sealed := backuptest.SealedSnapshot(ctx, t, cli, key, "clusters/a")
	cli.Close()
	stopSource() // the restored member takes its peer address

	dir := t.TempDir()
	archiveURL := "file://" + filepath.Join(dir, "a.bak")
	if err := backup.Write(ctx, archiveURL, sealed, nil); err != nil {
		t.Fatal(err)
	}
	secretDir := filepath.Join(dir, "restore")
	writeFile(t, filepath.Join(secretDir, "url"), archiveURL)
	writeFile(t, filepath.Join(secretDir, "key"), string(key))
	writeFile(t, filepath.Join(secretDir, "file-root"), dir)

	dataDir := filepath.Join(dir, "volume")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	args = append(args, "--data-dir="+dataDir)
	msg, err := Member(ctx, secretDir, args)
	if err != nil || !strings.Contains(msg, "restored "+dataDir) {
		t.Fatalf("restore into an empty volume: %q, %v", msg, err)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 1 || entries[0].Name() != "member" {
		t.Errorf("the data dir holds %v, want only etcd's member directory", entries)
	}
	if msg, err := Member(ctx, secretDir, args); err != nil || !strings.Contains(msg, "holds data already") {
		t.Errorf("a second run: %q, %v; want the data left alone", msg, err)
	}

	// A volume holding something of someone else's beside (no member): the
	// restore works in a directory of its own and leaves that alone.
	other := filepath.Join(dir, "other-volume")
	writeFile(t, filepath.Join(other, ".restore", "keep"), "not ours")
	otherArgs := append(append([]string(nil), args[:len(args)-1]...), "--data-dir="+other)
	if _, err := Member(ctx, secretDir, otherArgs); err != nil {
		t.Fatalf("restore into a volume with a foreign .restore: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(other, ".restore", "keep")); err != nil || string(b) != "not ours" {
		t.Errorf("a foreign file in the volume was touched: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(other); len(entries) != 2 {
		t.Errorf("the volume holds %v, want the foreign .restore and etcd's member only", entries)
	}

	restored, _ := startPlainEtcd(t, dataDir, peer)
	got, err := plainEtcdClient(t, restored).Get(ctx, "/registry/configmaps/default/kept")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("the restored etcd serves %v, %v; want the key written before the snapshot", got, err)
	}
}

// startPlainEtcd runs a one-member etcd without TLS on loopback, member
// etcd-0 at peer, token clusters-a, until stop or the test's end.
func startPlainEtcd(t *testing.T, dataDir, peer string) (e *embed.Etcd, stop func()) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "etcd-0", dataDir
	cfg.InitialCluster, cfg.InitialClusterToken = "etcd-0="+peer, "clusters-a"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	peerURL, _ := url.Parse(peer)
	clientURL, _ := url.Parse("http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)))
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peerURL}, []url.URL{*peerURL}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*clientURL}, []url.URL{*clientURL}
	cfg.ListenMetricsUrls = nil
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop = sync.OnceFunc(e.Close)
	t.Cleanup(stop)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		t.Fatal("etcd did not become ready")
	}
	return e, stop
}

func plainEtcdClient(t *testing.T, e *embed.Etcd) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Clients[0].Addr().String()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
