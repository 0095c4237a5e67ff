package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"hypershift.dev/internal/backup"
	"hypershift.dev/internal/backup/backuptest"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// TestRestoreStepFillsDataBeforeTheFirstStart: an etcd spec with a
// Restore is started on data the restore step (`hypershift restore
// etcd-data`, in a child process) filled from an archive: the new member
// serves the key written into the source before its snapshot. An archive
// that cannot be read keeps the member from starting at all, reported as
// a start failure naming the archive. The restore's files are gone once
// the step ends, and a restart over the member's own data leaves it alone.
func TestRestoreStepFillsDataBeforeTheFirstStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, _, source := startEtcd(t, runtime.ControlPlaneRef{Namespace: "clusters-source", Name: "source"})
	cli := etcdClient(t, source)
	if _, err := cli.Put(ctx, "/registry/configmaps/default/kept", "v"); err != nil {
		t.Fatal(err)
	}
	key := []byte(strings.Repeat("k", 32))
	sealed := backuptest.SealedSnapshot(ctx, t, cli, key, "clusters/source")
	archives := t.TempDir()
	archiveURL := "file://" + filepath.Join(archives, "a.bak")
	if err := backup.Write(ctx, archiveURL, sealed, nil); err != nil {
		t.Fatal(err)
	}
	restoreOf := func(url string) *runtime.Restore {
		return &runtime.Restore{Files: []runtime.File{
			{Path: runtime.RestoreURLFile, Content: []byte(url), Secret: true},
			{Path: "key", Content: key, Secret: true},
			{Path: runtime.RestoreFileRootFile, Content: []byte(archives), Secret: true},
		}}
	}

	ref := runtime.ControlPlaneRef{Namespace: "clusters-restored", Name: "restored"}
	root := testenv.ShortTempDir(t)
	rt := newRuntime(t, root)
	t.Cleanup(func() { rt.Stop(context.Background(), ref) })
	spec := etcdSpec(t, filepath.Join(root, ref.Namespace))

	// An archive that is not there: the member does not start.
	spec.Restore = restoreOf("file://" + filepath.Join(archives, "missing.bak"))
	if err := rt.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed restore reported", func() bool {
		s := status(rt, ref)
		return s.Phase == runtime.BackOff && s.LastExitReason == "StartFailed" &&
			strings.Contains(s.Message, "restore etcd-0's data") && strings.Contains(s.Message, "missing.bak")
	})
	if s := status(rt, ref); s.PID != 0 || s.Restarts != 0 {
		t.Errorf("etcd ran although its restore failed: %+v", s)
	}
	dataDir := filepath.Join(root, ref.Namespace, "etcd-0", "data")
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err == nil {
		t.Fatal("a failed restore left a member")
	}

	// The archive: the member starts on the restored data.
	spec.Restore = restoreOf(archiveURL)
	if err := rt.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	rt.Stop(ctx, ref) // leave the back-off at once
	if err := rt.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restored etcd running", running(rt, ref))
	got, err := etcdClient(t, spec).Get(ctx, "/registry/configmaps/default/kept")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "v" {
		t.Fatalf("the restored etcd serves %v, %v; want the key written before the snapshot", got, err)
	}
	if _, err := os.Stat(filepath.Join(root, ref.Namespace, "etcd-0", ".restore")); err == nil {
		t.Error("the restore's files outlived the step")
	}
	log, _ := os.ReadFile(filepath.Join(root, ref.Namespace, "etcd-0", "etcd-0.log"))
	if !strings.Contains(string(log), "etcd member etcd-0: restored "+dataDir+" from "+archiveURL) {
		t.Errorf("the instance's log does not say what the restore did:\n%s", log)
	}

	// A restart over the member's own data (a write after the restore)
	// leaves it alone, though the spec still has the Restore.
	if _, err := etcdClient(t, spec).Put(ctx, "/registry/configmaps/default/later", "w"); err != nil {
		t.Fatal(err)
	}
	rt.Stop(ctx, ref)
	if err := rt.Apply(ctx, ref, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "etcd running again", running(rt, ref))
	if got, err := etcdClient(t, spec).Get(ctx, "/registry/configmaps/default/later"); err != nil || len(got.Kvs) != 1 {
		t.Fatalf("after a restart the write made since the restore is %v, %v: the data was restored again", got, err)
	}
}

// etcdClient reaches the plain-HTTP etcd of an etcdSpec.
func etcdClient(t *testing.T, spec runtime.Spec) *clientv3.Client {
	t.Helper()
	var endpoint string
	for _, a := range spec.Args {
		if v, ok := strings.CutPrefix(a, "--advertise-client-urls="); ok {
			endpoint = v
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}
