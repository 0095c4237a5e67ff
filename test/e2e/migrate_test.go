package e2e

import (
	"bufio"
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hypershift.dev/internal/backup/blobtest"
)

// TestMigrateCluster moves a hosted cluster with simulated nodes between
// two management planes on this host while a client writes to it
// continuously (retrying, keeping every acknowledged write): every
// acknowledged write is on the target, the admin kubeconfig and the
// service-account token saved before work unchanged, the nodes are Ready
// there, and the source's cluster, processes and data are gone — there
// through file:// and back through an in-process S3 server. A migration
// whose final backup cannot be written rolls back: the source is unfenced
// and serves again.
func TestMigrateCluster(t *testing.T) {
	ownDirAndPorts(t)
	src, dst := upCLI(t), upCLI(t)
	dstMgmt := filepath.Join(dst.dataDir, "management.kubeconfig")
	srcMgmt := filepath.Join(src.dataDir, "management.kubeconfig")
	src.must("create", "cluster", "simulated", "--name", "m", "--node-pool-replicas", "2", "--wait", "--timeout", "3m")
	saved := t.TempDir()
	kc := filepath.Join(saved, "m.kubeconfig")
	src.must("create", "kubeconfig", "--name", "m", "-o", kc)
	waitReadyNodes(t, kc, 2)
	cs := hostedClient(t, kc)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(t.Context(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "robot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(7200))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(saved, "key")
	writeFile(t, keyFile, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n")

	t.Run("refusals and rollback", func(t *testing.T) {
		if stderr := src.fails("migrate", "cluster", "--name", "m", "--to-kubeconfig", srcMgmt,
			"--via", "file://"+filepath.Join(saved, "x.bak"), "--key-file", keyFile); !strings.Contains(stderr, "is this management plane") {
			t.Errorf("migrating to the same plane: %s", stderr)
		}
		// The operator cannot write into a directory that does not exist:
		// the final backup fails after the fence, and the fence is lifted.
		stderr := src.fails("migrate", "cluster", "--name", "m", "--to-kubeconfig", dstMgmt,
			"--via", "file://"+filepath.Join(saved, "missing", "m.bak"), "--key-file", keyFile, "--timeout", "2m")
		if !strings.Contains(stderr, "BucketUnavailable") || !strings.Contains(stderr, "rolled back: lifted the fence on the source") {
			t.Errorf("migration with an unwritable archive: %s", stderr)
		}
		eventually(t, 2*time.Minute, "the source Available again", func() error {
			if got := hcCondition(t, srcMgmt, "m", "Available"); !strings.HasPrefix(got, "True/") {
				return errorf("Available %s", got)
			}
			return nil
		})
		if got := hcCondition(t, srcMgmt, "m", "Fenced"); got != "False/NotFenced" {
			t.Errorf("Fenced %s after the rollback, want False/NotFenced", got)
		}
		if out, _ := kubectl(t, dstMgmt, "-n", "clusters", "get", "hostedcluster", "m"); !strings.Contains(out, "NotFound") {
			t.Errorf("the target has a cluster after the rollback:\n%s", out)
		}
		waitReadyNodes(t, kc, 2)

		// Interrupted once the copy on the target exists: the copy is
		// deleted, then the fence lifted.
		stdout, stderr := interruptMigrate(t, src, "restoring from",
			"migrate", "cluster", "--name", "m", "--to-kubeconfig", dstMgmt,
			"--via", "file://"+filepath.Join(saved, "interrupted.bak"), "--key-file", keyFile, "--timeout", "2m")
		if !strings.Contains(stderr, "interrupted") || !strings.Contains(stderr, "rolled back: deleted the restored copy on the target, lifted the fence on the source") {
			t.Errorf("interrupted migration:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
		eventually(t, 2*time.Minute, "the source Available again", func() error {
			if got := hcCondition(t, srcMgmt, "m", "Available"); !strings.HasPrefix(got, "True/") {
				return errorf("Available %s", got)
			}
			return nil
		})
		if out, _ := kubectl(t, dstMgmt, "-n", "clusters", "get", "hostedcluster", "m"); !strings.Contains(out, "NotFound") {
			t.Errorf("the target has a cluster after the interrupted migration:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(dst.dataDir, "clusters", "clusters-m")); !os.IsNotExist(err) {
			var left []string
			_ = filepath.WalkDir(filepath.Join(dst.dataDir, "clusters", "clusters-m"), func(p string, _ os.DirEntry, _ error) error {
				left = append(left, p)
				return nil
			})
			t.Errorf("the target keeps the restored copy's data (%v): %v", err, left)
		}
		waitReadyNodes(t, kc, 2)
	})

	// There and back: through file://, then through an in-process S3
	// server (only the CLI has the credentials; each operator gets them in
	// its request's Secret), and there again through gs://.
	migrateUnderWrites(t, src, dst, "file://"+filepath.Join(saved, "m.bak"), nil, kc, keyFile, tr.Status.Token)
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	migrateUnderWrites(t, dst, src, s3URL(srv.URL, "m.bak"), []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}, kc, keyFile, tr.Status.Token)
	if _, err := backend.HeadObject("backups", "m.bak"); err != nil {
		t.Errorf("the archive is not in the S3 bucket: %v", err)
	}
	// And there again through an in-process GCS server (fake-gcs-server),
	// which both operators reach on loopback.
	gcs := blobtest.StartGCS(t, "backups")
	migrateUnderWrites(t, src, dst, gcs.URL("backups", "m.bak"), nil, kc, keyFile, tr.Status.Token)
	if _, err := gcs.Server.GetObject("backups", "m.bak"); err != nil {
		t.Errorf("the archive is not in the GCS bucket: %v", err)
	}
}

// migrateUnderWrites migrates cluster m from one plane to another through
// via while a writer writes with the saved kubeconfig kc, and checks the
// outcome: no acknowledged write lost, the writer goes on against the
// target, kc and the service-account token work unchanged, the nodes are
// Ready with the target's agent, the source's cluster, data and agent gone.
func migrateUnderWrites(t *testing.T, from, to *cli, via string, env []string, kc, keyFile, token string) {
	t.Helper()
	fromMgmt := filepath.Join(from.dataDir, "management.kubeconfig")
	toMgmt := filepath.Join(to.dataDir, "management.kubeconfig")
	w := newWriter(hostedClientWithTimeout(t, kc, 2*time.Second))
	stop := w.start(t.Context())
	eventually(t, time.Minute, "20 acknowledged writes", func() error {
		if n := w.count(); n < 20 {
			return errorf("%d acknowledged", n)
		}
		return nil
	})
	out := from.mustEnv(env, "migrate", "cluster", "--name", "m", "--to-kubeconfig", toMgmt,
		"--via", via, "--key-file", keyFile, "--timeout", "5m")
	t.Logf("migrate output:\n%s", out)
	match := regexp.MustCompile(`migrated hosted cluster clusters/m in [0-9.]+s; downtime ([0-9.]+)s`).FindStringSubmatch(out)
	if match == nil {
		t.Fatalf("migrate output does not report the downtime:\n%s", out)
	}
	downtime, _ := strconv.ParseFloat(match[1], 64)
	// The writer goes on against the target with the same kubeconfig.
	after := w.count()
	eventually(t, 2*time.Minute, "20 writes acknowledged by the target", func() error {
		if n := w.count() - after; n < 20 {
			return errorf("%d acknowledged since the migration", n)
		}
		return nil
	})
	stop()
	acked, failures, longest := w.result()
	t.Logf("MIGRATION via %s: downtime %.1fs (fence to Available, as migrate measured it); the writer saw %d acknowledged writes, %d failed requests, longest outage %.1fs",
		strings.SplitN(via, ":", 2)[0], downtime, len(acked), failures, longest.Seconds())
	w.verifyKept(t, hostedClient(t, kc), 40)
	checkToken(t, kc, token)

	// The saved kubeconfig reaches the target: the endpoint is the target's.
	targetKC := filepath.Join(t.TempDir(), "target.kubeconfig")
	to.must("create", "kubeconfig", "--name", "m", "-o", targetKC)
	if a, b := kubeconfigServer(t, kc), kubeconfigServer(t, targetKC); a != b {
		t.Errorf("saved kubeconfig points at %s, the target publishes %s", a, b)
	}
	waitReadyNodes(t, kc, 2)
	if out := to.must("get", "clusters"); !regexpMatch(out, `(?m)^clusters\s+m\s+\S+\s+True\s`) {
		t.Errorf("target's clusters:\n%s", out)
	}

	// The source is gone: object, processes, data.
	if out, _ := kubectl(t, fromMgmt, "-n", "clusters", "get", "hostedcluster", "m"); !strings.Contains(out, "NotFound") {
		t.Errorf("the source still has the cluster:\n%s", out)
	}
	for _, dir := range []string{filepath.Join(from.dataDir, "clusters", "clusters-m"), filepath.Join(from.dataDir, "nodes", "clusters-m")} {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there after the migration (%v)", dir, err)
		}
	}
	running := 0
	for _, p := range recordedProcesses(t, filepath.Join(to.dataDir, "nodes", "clusters-m")) {
		if p.running() {
			running++
		}
	}
	if running == 0 {
		t.Error("no node agent of the cluster runs on the target plane")
	}
}

// interruptMigrate runs hypershift with args, sends it SIGINT once its
// output has a line containing after, and returns its output; it must
// exit with an error.
func interruptMigrate(t *testing.T, c *cli, after string, args ...string) (string, string) {
	t.Helper()
	cmd := exec.Command(c.bin, append([]string{"--data-dir", c.dataDir}, args...)...)
	cmd.Env = withoutKubeconfig()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sent := false
	scanner := bufio.NewScanner(pipe)
	for scanner.Scan() {
		out.WriteString(scanner.Text() + "\n")
		if !sent && strings.Contains(scanner.Text(), after) {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Error(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	if !sent || err == nil {
		t.Fatalf("hypershift %s: interrupted %v, exit %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), sent, err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}
