package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// kubeRuntimeMigrate moves a cluster of the kube runtime (published on a
// node port of the management cluster mgmt) to the embedded plane of hs
// (HostPort, a port of this host) and back onto a new etcd volume, each
// time through an S3 server on the pod bridge while a client writes to
// it: the source is fenced, the target serves the same data with the same
// CAs, the writer, switched to the endpoint the target publishes, goes on,
// no acknowledged write is lost, and the source is gone (its namespace on
// mgmt, its directory under the embedded plane's data dir). Between the
// two, its CAs are rotated on the embedded plane: the move back carries
// the rotation, which does not start again.
func kubeRuntimeMigrate(t *testing.T, hs *cli, mgmt string, nodeIP net.IP, class, volumes string) {
	makeHostPathVolume(t, mgmt, "moved-etcd-0", class, filepath.Join(volumes, "moved-etcd-0"), "moved")
	kubeRuntime := []string{
		"--api-server-publishing", "NodePort", "--api-server-address", nodeIP.String(),
		"--etcd-storage-class", class, "--etcd-storage-size", "1Gi",
	}
	hs.must(append(append([]string{"--kubeconfig", mgmt, "create", "cluster", "none", "--name", "moved"}, kubeRuntime...), "--wait", "--timeout", "5m")...)
	source := filepath.Join(t.TempDir(), "moved.kubeconfig")
	hs.must("--kubeconfig", mgmt, "create", "kubeconfig", "--name", "moved", "-o", source)
	mustKubectl(t, source, "create", "configmap", "kept", "--from-literal=k=v")
	embedded := filepath.Join(hs.dataDir, "management.kubeconfig")

	srv, _ := s3OnPodBridge(t)
	m := &runtimeMigration{hs: hs, key: filepath.Join(t.TempDir(), "backup.key"), env: []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}}
	writeFile(t, m.key, strings.Repeat("6b", 32)+"\n")

	there := m.run(t, "kube runtime → embedded plane", source, mgmt, embedded, s3URL(srv.URL, "clusters/moved.bak"), "--api-server-publishing", "HostPort")
	eventually(t, 2*time.Minute, "the source's namespace to be gone", func() error {
		if out, err := kubectl(t, mgmt, "get", "namespace", "clusters-moved"); err == nil {
			return errorf("still there:\n%s", out)
		}
		return nil
	})

	// Its CAs rotated there, it moves back carrying the rotation: Done,
	// not started again by the token in its spec.
	hs.must("--kubeconfig", embedded, "rotate", "ca", "--name", "moved", "--wait", "--timeout", "5m")
	rotation := func(kc string) string {
		return strings.TrimSpace(mustKubectl(t, kc, "-n", "clusters", "get", "hostedcluster", "moved", "-o",
			`jsonpath={.status.certificates.caRotation.token} {.status.certificates.caRotation.phase} {.status.certificates.caRotation.startedAt}`))
	}
	rotated := rotation(embedded)
	if !strings.Contains(rotated, " Done ") {
		t.Fatalf("rotation on the embedded plane: %q, want Done", rotated)
	}
	hs.must("--kubeconfig", embedded, "create", "kubeconfig", "--name", "moved", "-o", there)

	makeHostPathVolume(t, mgmt, "moved-back-etcd-0", class, filepath.Join(volumes, "moved-back-etcd-0"), "moved")
	back := m.run(t, "embedded plane → kube runtime", there, embedded, mgmt, s3URL(srv.URL, "clusters/moved-back.bak"), kubeRuntime...)
	if got := rotation(mgmt); got != rotated {
		t.Errorf("the CA rotation after the move: %q, want the archive's %q (a rotation started again replaces the CAs kubeconfigs trust)", got, rotated)
	}
	if _, err := os.Stat(filepath.Join(hs.dataDir, "clusters", "clusters-moved")); !os.IsNotExist(err) {
		t.Errorf("the embedded plane keeps the cluster's directory after it moved back (%v)", err)
	}
	if v := mustKubectl(t, back, "get", "configmap", "kept", "-o", "jsonpath={.data.k}"); v != "v" {
		t.Errorf("configmap kept after the round trip: %q", v)
	}
	hs.must("--kubeconfig", mgmt, "destroy", "cluster", "--name", "moved", "--wait", "--timeout", "3m")
}

// runtimeMigration migrates cluster moved between the planes of hs.
type runtimeMigration struct {
	hs       *cli
	key      string
	env      []string
	migrated int // writers run so far, for their prefixes
}

// run migrates cluster moved from the plane of fromMgmt to the plane of
// toMgmt through via, with flags adapting its spec, while a writer writes
// through the kubeconfig kc and then through the target's; it returns the
// target's kubeconfig. The writer must see no acknowledged write lost.
func (m *runtimeMigration) run(t *testing.T, what, kc, fromMgmt, toMgmt, via string, flags ...string) string {
	t.Helper()
	m.migrated++
	w := newWriter(hostedClientWithTimeout(t, kc, 2*time.Second))
	w.prefix = fmt.Sprintf("m%d", m.migrated)
	stop := w.start(t.Context())
	defer stop()
	eventually(t, time.Minute, "20 acknowledged writes on the source", func() error {
		if n := w.count(); n < 20 {
			return errorf("%d acknowledged", n)
		}
		return nil
	})
	args := append([]string{
		"--kubeconfig", fromMgmt, "migrate", "cluster", "--name", "moved", "--to-kubeconfig", toMgmt,
		// Each step's bound: the removal of the fenced source on the kube
		// runtime took 192 s in a run where every test took twice its time.
		"--via", via, "--key-file", m.key, "--timeout", "10m",
	}, flags...)
	out := m.hs.mustEnv(m.env, args...)
	t.Logf("migrate output:\n%s", out)
	match := regexp.MustCompile(`migrated hosted cluster clusters/moved in ([0-9.]+)s; downtime ([0-9.]+)s`).FindStringSubmatch(out)
	if match == nil {
		t.Fatalf("migrate output does not report the downtime:\n%s", out)
	}

	// The target publishes another endpoint: the writer goes on through
	// a kubeconfig of the target, with the same CA.
	target := filepath.Join(t.TempDir(), "target.kubeconfig")
	m.hs.must("--kubeconfig", toMgmt, "create", "kubeconfig", "--name", "moved", "-o", target)
	if got, old := kubeconfigServer(t, target), kubeconfigServer(t, kc); got == old || !strings.Contains(out, strings.TrimPrefix(got, "https://")) {
		t.Errorf("the target's kubeconfig names %s (the source's was %s); migrate printed:\n%s", got, old, out)
	}
	if a, b := loadKubeconfig(t, kc).ca, loadKubeconfig(t, target).ca; !bytes.Equal(a, b) {
		t.Error("the target's kubeconfig trusts another CA than the source's: the CAs were not kept")
	}
	targetClient := hostedClientWithTimeout(t, target, 2*time.Second)
	w.cs.Store(targetClient)
	after := w.count()
	eventually(t, 2*time.Minute, "20 writes acknowledged by the target", func() error {
		if n := w.count() - after; n < 20 {
			return errorf("%d acknowledged since the migration; the newest error: %s", n, w.lastError())
		}
		return nil
	})
	stop()
	t.Logf("MIGRATION %s: %s s, downtime %s s (fence to Available, as migrate measured it)", what, match[1], match[2])
	w.verifyKept(t, targetClient, 40)
	if out, _ := kubectl(t, fromMgmt, "-n", "clusters", "get", "hostedcluster", "moved"); !strings.Contains(out, "NotFound") {
		t.Errorf("the source still has the cluster:\n%s", out)
	}
	return target
}
