package e2e

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"hypershift.dev/internal/backup/blobtest"
	"hypershift.dev/internal/testenv"
)

// backupObjects is how many ConfigMaps TestBackupRestore writes.
const backupObjects = 300

// TestBackupRestore writes objects into a hosted cluster, backs it up
// through the operator, purges the management plane, starts a new one on
// the same data dir and restores: every object is there, and the admin
// kubeconfig and the service-account token saved before the backup work
// unchanged (same CAs, client certificate, service-account key, endpoint).
// Once through file://, once through an in-process S3 server the operator
// reaches on loopback, with credentials given to that bucket only, once
// through an in-process GCS server (fake-gcs-server) and once through
// Azurite.
func TestBackupRestore(t *testing.T) {
	ownDirAndPorts(t)
	hs := newCLI(t)
	up := func() { hs.must("up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir()) }
	up()
	t.Cleanup(func() { hs.run("down", "--purge") })
	hs.must("create", "cluster", "none", "--name", "a", "--wait", "--timeout", "3m")

	// Saved outside the data dir, which is purged: a user's copy.
	saved := t.TempDir()
	kc := filepath.Join(saved, "a.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "a", "-o", kc)
	cs := hostedClient(t, kc)
	createConfigMaps(t, cs, "default", backupObjects)
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(t.Context(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(t.Context(), "robot",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(7200))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token
	checkToken(t, kc, token) // before: the check itself works
	keyFile := filepath.Join(saved, "key")
	writeFile(t, keyFile, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n")

	cycle := func(t *testing.T, archiveURL string, env []string) {
		out := hs.mustEnv(env, "backup", "cluster", "--name", "a", "--to", archiveURL, "--key-file", keyFile)
		if !regexpMatch(out, `backup \S+ of hosted cluster clusters/a: `+regexpQuote(archiveURL)+`, \d+ bytes, `) {
			t.Errorf("backup output does not name the URL and size:\n%s", out)
		}
		hs.must("down", "--purge")
		up()
		out = hs.mustEnv(env, "restore", "cluster", "--from", archiveURL, "--key-file", keyFile, "--timeout", "3m")
		if !strings.Contains(out, "restored hosted cluster clusters/a in ") {
			t.Errorf("restore output:\n%s", out)
		}
		// The saved kubeconfig, unchanged.
		checkConfigMaps(t, hostedClient(t, kc), backupObjects)
		checkToken(t, kc, token)
	}

	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		cycle(t, "file://"+filepath.Join(dir, "a.bak"), nil)
		if data, err := os.ReadFile(filepath.Join(dir, "a.bak")); err != nil || bytes.Contains(data, []byte("cm-1")) {
			t.Errorf("archive unreadable (%v) or not encrypted", err)
		}
	})

	t.Run("s3", func(t *testing.T) {
		backend := s3mem.New()
		if err := backend.CreateBucket("backups"); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(gofakes3.New(backend).Server())
		t.Cleanup(srv.Close)
		// Only the CLI has the credentials; the operator gets them in the
		// request's Secret.
		env := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
		cycle(t, s3URL(srv.URL, "clusters/a.bak"), env)
		if _, err := backend.HeadObject("backups", "clusters/a.bak"); err != nil {
			t.Errorf("archive not in the S3 bucket: %v", err)
		}
	})

	t.Run("gs", func(t *testing.T) {
		// fake-gcs-server in this process on loopback; the operator, another
		// process, reaches it through the URL's endpoint option, anonymously.
		gcs := blobtest.StartGCS(t, "backups")
		cycle(t, gcs.URL("backups", "clusters/a.bak"), nil)
		if _, err := gcs.Server.GetObject("backups", "clusters/a.bak"); err != nil {
			t.Errorf("archive not in the GCS bucket: %v", err)
		}
	})

	t.Run("azblob", func(t *testing.T) {
		// Azurite on loopback; only the CLI has the account key, the
		// operator gets it in the request's Secret.
		az := blobtest.StartAzurite(t, "backups")
		env := []string{"AZURE_STORAGE_ACCOUNT=" + blobtest.AzureAccount, "AZURE_STORAGE_KEY=" + blobtest.AzureKey}
		cycle(t, az.URL("backups", "clusters/a.bak"), env)
		azc, err := az.Client()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := azc.ServiceClient().NewContainerClient("backups").NewBlobClient("clusters/a.bak").GetProperties(t.Context(), nil); err != nil {
			t.Errorf("archive not in the Azure container: %v", err)
		}
	})

	t.Run("refusals, another name, --overwrite", func(t *testing.T) {
		dir := t.TempDir()
		archiveURL := "file://" + filepath.Join(dir, "a.bak")
		hs.must("backup", "cluster", "--name", "a", "--to", archiveURL, "--key-file", keyFile)
		if stderr := hs.fails("restore", "cluster", "--from", archiveURL, "--key-file", keyFile); !strings.Contains(stderr, "hosted cluster clusters/a exists") || !strings.Contains(stderr, "--overwrite") {
			t.Errorf("restore over an existing cluster: %s", stderr)
		}
		other := filepath.Join(dir, "other.key")
		writeFile(t, other, strings.Repeat("ab", 32))
		if stderr := hs.fails("restore", "cluster", "--from", archiveURL, "--key-file", other, "--name", "b"); !strings.Contains(stderr, "the key does not open this archive") {
			t.Errorf("restore with a wrong key: %s", stderr)
		}
		if out := hs.must("get", "clusters"); strings.Contains(out, "b ") {
			t.Errorf("a refused restore created a cluster:\n%s", out)
		}
		// The operator keeps file:// archives in its --backup-file-root.
		if stderr := hs.fails("backup", "cluster", "--name", "a", "--to", "file:///var/tmp/hypershift-outside.bak", "--key-file", keyFile, "--timeout", "1m"); !strings.Contains(stderr, "is outside") || !strings.Contains(stderr, "--backup-file-root") {
			t.Errorf("backup to a file:// path outside the operator's root: %s", stderr)
		}
		if _, err := os.Stat("/var/tmp/hypershift-outside.bak"); err == nil {
			t.Error("the refused backup was written")
		}
		// An unreachable bucket is a condition with its reason; the
		// operator goes on reconciling.
		stderr := hs.failsEnv([]string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"},
			"backup", "cluster", "--name", "a", "--to", s3URL(fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)), "a.bak"), "--key-file", keyFile, "--timeout", "2m")
		if !strings.Contains(stderr, "BucketUnavailable") {
			t.Errorf("backup to an unreachable bucket: %s", stderr)
		}
		desc := hs.must("describe", "cluster", "a")
		if !regexpMatch(desc, `BackupSucceeded +False +BucketUnavailable`) || !regexpMatch(desc, `Available +True`) {
			t.Errorf("describe after a failed backup:\n%s", desc)
		}
		hs.must("backup", "cluster", "--name", "a", "--to", archiveURL, "--key-file", keyFile)

		// Under another name beside the original, whose port is taken: the
		// endpoint changes, the condition says so and where the new
		// address is; the objects are there.
		out := hs.must("restore", "cluster", "--from", archiveURL, "--key-file", keyFile, "--name", "b", "--timeout", "3m")
		if !regexpMatch(out, `note: the API endpoint changed from \S+ to \S+: .*Secret clusters/b-admin-kubeconfig`) {
			t.Errorf("restore beside the original does not say the endpoint changed:\n%s", out)
		}
		if desc := hs.must("describe", "cluster", "b"); !regexpMatch(desc, `Restored +True +RestoreEndpointChanged .*is in use.*Secret clusters/b-admin-kubeconfig`) {
			t.Errorf("describe of a restore whose port was taken:\n%s", desc)
		}
		kcB := filepath.Join(t.TempDir(), "b.kubeconfig")
		hs.must("create", "kubeconfig", "--name", "b", "-o", kcB)
		checkConfigMaps(t, hostedClient(t, kcB), backupObjects)
		hs.must("destroy", "cluster", "--name", "b")

		// --overwrite deletes the cluster first and restores it.
		if stderr := hs.fails("restore", "cluster", "--from", archiveURL, "--key-file", keyFile, "--overwrite"); !strings.Contains(stderr, "name it with --name and --namespace") {
			t.Errorf("restore --overwrite of the cluster the archive names:\n%s", stderr)
		}
		out = hs.must("restore", "cluster", "--from", archiveURL, "--key-file", keyFile, "--overwrite", "--name", "a", "-n", "clusters", "--timeout", "3m")
		if !strings.Contains(out, "deleting hosted cluster clusters/a (--overwrite)") {
			t.Errorf("restore --overwrite output:\n%s", out)
		}
		if strings.Contains(out, "endpoint changed") {
			t.Errorf("restore --overwrite moved the endpoint:\n%s", out)
		}
		checkConfigMaps(t, hostedClient(t, kc), backupObjects)
		checkToken(t, kc, token)
	})
}

// s3URL is the archive URL of key in bucket backups of the S3 server at
// endpoint.
func s3URL(endpoint, key string) string {
	return "s3://backups/" + key + "?region=us-east-1&use_path_style=true&disable_https=true&endpoint=" + url.QueryEscape(endpoint)
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteRune('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// checkConfigMaps says every ConfigMap createConfigMaps wrote is there.
func checkConfigMaps(t *testing.T, cs *kubernetes.Clientset, n int) {
	t.Helper()
	list, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list config maps with the saved kubeconfig: %v", err)
	}
	have := map[string]string{}
	for _, cm := range list.Items {
		have[cm.Name] = cm.Data["i"]
	}
	for i := range n {
		if have[fmt.Sprintf("cm-%d", i)] != fmt.Sprint(i) {
			t.Fatalf("config map cm-%d missing or changed after the restore (%d config maps)", i, len(list.Items))
		}
	}
}

// mustEnv runs a command that has to succeed with env added to its
// environment.
func (c *cli) mustEnv(env []string, args ...string) string {
	c.t.Helper()
	r := c.runEnv(env, args...)
	if r.err != nil {
		c.t.Fatalf("hypershift %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r.stdout
}

// failsEnv runs a command that has to fail, with env added.
func (c *cli) failsEnv(env []string, args ...string) string {
	c.t.Helper()
	r := c.runEnv(env, args...)
	if r.err == nil {
		c.t.Fatalf("hypershift %s succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), r.stdout)
	}
	return r.stderr
}

func (c *cli) runEnv(env []string, args ...string) result {
	start := time.Now()
	cmd := exec.Command(c.bin, append([]string{"--data-dir", c.dataDir}, args...)...)
	cmd.Env = append(withoutKubeconfig(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	c.t.Logf("hypershift %s (%.1fs)", strings.Join(args, " "), time.Since(start).Seconds())
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

// TestBackupRestoreSecondPlane restores a cluster with three simulated
// nodes into a second management plane (another data dir) after the first
// one is gone: the nodes are Ready again on the new plane, and the admin
// kubeconfig saved from the first works (the API port was free, so kept).
func TestBackupRestoreSecondPlane(t *testing.T) {
	ownDirAndPorts(t)
	first := newCLI(t)
	first.must("up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir())
	t.Cleanup(func() { first.run("down", "--purge") })
	first.must("create", "cluster", "simulated", "--name", "s", "--node-pool-replicas", "3", "--wait", "--timeout", "3m")
	saved := t.TempDir()
	kc := filepath.Join(saved, "s.kubeconfig")
	first.must("create", "kubeconfig", "--name", "s", "-o", kc)
	nodesReady := func() error {
		out, err := kubectl(t, kc, "get", "nodes", "-o",
			`jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
		if err != nil {
			return err
		}
		fields := strings.Fields(out)
		if len(fields) != 3 {
			return errorf("nodes %q, want 3", out)
		}
		for _, f := range fields {
			if !strings.HasSuffix(f, "=True") {
				return errorf("nodes %q, want all Ready", out)
			}
		}
		return nil
	}
	eventually(t, 3*time.Minute, "3 Ready nodes on the first plane", nodesReady)
	before := mustKubectl(t, kc, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}")
	keyFile := filepath.Join(saved, "key")
	writeFile(t, keyFile, strings.Repeat("5a", 32))
	archiveURL := "file://" + filepath.Join(saved, "s.bak")
	first.must("backup", "cluster", "--name", "s", "--to", archiveURL, "--key-file", keyFile)
	// Gone, with its simulated agents: Ready nodes later are the new plane's.
	first.must("down", "--purge")

	second := newCLI(t)
	second.must("up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir())
	t.Cleanup(func() { second.run("down", "--purge") })
	start := time.Now()
	second.must("restore", "cluster", "--from", archiveURL, "--key-file", keyFile, "--timeout", "3m")
	// The nodes' status in the snapshot says Ready; what proves the new
	// plane's agents are their Leases, renewed after the restore began.
	cs := hostedClient(t, kc)
	eventually(t, 3*time.Minute, "3 Ready nodes whose Leases the second plane's agents renew", func() error {
		if err := nodesReady(); err != nil {
			return err
		}
		leases, err := cs.CoordinationV1().Leases("kube-node-lease").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		renewed := 0
		for _, l := range leases.Items {
			if l.Spec.RenewTime != nil && l.Spec.RenewTime.After(start) {
				renewed++
			}
		}
		if renewed != 3 {
			return errorf("%d of %d node Leases renewed since the restore began, want 3", renewed, len(leases.Items))
		}
		return nil
	})
	t.Logf("nodes Ready on the second plane %.1fs after restore started", time.Since(start).Seconds())
	if after := mustKubectl(t, kc, "get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"); after != before {
		t.Errorf("nodes %q after the restore, want the same %q", after, before)
	}
	eventually(t, time.Minute, "the NodePool Ready on the second plane", func() error {
		msg := mustKubectl(t, filepath.Join(second.dataDir, "management.kubeconfig"), "-n", "clusters", "get", "nodepool", "s",
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
		if !strings.Contains(msg, "3 of 3 nodes Ready") {
			return errorf("Ready message %q", msg)
		}
		return nil
	})
}

// TestBackupRestoreHighlyAvailable restores a HighlyAvailable cluster: each
// of the three etcd members gets its own data dir from the one snapshot,
// they form a quorum again (writes work), and the objects are there.
func TestBackupRestoreHighlyAvailable(t *testing.T) {
	ownDirAndPorts(t)
	hs := upCLI(t)
	hs.must("create", "cluster", "none", "--name", "h", "--availability-policy", "HighlyAvailable", "--wait", "--timeout", "4m")
	saved := t.TempDir()
	kc := filepath.Join(saved, "h.kubeconfig")
	hs.must("create", "kubeconfig", "--name", "h", "-o", kc)
	createConfigMaps(t, hostedClient(t, kc), "default", 50)
	keyFile := filepath.Join(saved, "key")
	writeFile(t, keyFile, strings.Repeat("3c", 32))
	archiveURL := "file://" + filepath.Join(saved, "h.bak")
	hs.must("backup", "cluster", "--name", "h", "--to", archiveURL, "--key-file", keyFile)
	hs.must("down", "--purge")
	hs.must("up", "--detach", "--metrics-bind-address", "0", "--backup-file-root", os.TempDir())
	hs.must("restore", "cluster", "--from", archiveURL, "--key-file", keyFile, "--timeout", "4m")
	if desc := hs.must("describe", "cluster", "h"); !regexpMatch(desc, `EtcdAvailable +True +\S+ +etcd-0, etcd-1, etcd-2 running`) {
		t.Errorf("describe after restoring an HA cluster:\n%s", desc)
	}
	cs := hostedClient(t, kc)
	checkConfigMaps(t, cs, 50)
	if _, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restore"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("write after the restore (needs an etcd quorum): %v", err)
	}
}
