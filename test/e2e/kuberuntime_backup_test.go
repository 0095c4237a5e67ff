package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"hypershift.dev/internal/nodes/join"
)

// kubeRuntimeBackupRestore backs up the kube runtime's cluster inner to an
// S3 server the test serves where the management cluster's pods reach it
// (the node's pod bridge), destroys the cluster, and restores it into a
// new etcd volume: the restore runs in etcd's pod (an init container),
// the objects are back, the kubeconfig saved before works unchanged (the
// node port is kept) and the restore's credentials are gone from the
// control plane's namespace. It returns the name of the restored cluster's
// etcd volume.
func kubeRuntimeBackupRestore(t *testing.T, hs *cli, mgmt, inner, class, volumes string) string {
	srv, backend := s3OnPodBridge(t)
	archive := s3URL(srv.URL, "clusters/inner.bak")
	// Only the CLI has the credentials; the operator and the restoring pod
	// get them through the request's Secret.
	env := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test"}
	key := filepath.Join(t.TempDir(), "backup.key")
	writeFile(t, key, strings.Repeat("5a", 32)+"\n")

	const objects = 50
	var manifest strings.Builder
	for i := range objects {
		fmt.Fprintf(&manifest, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: backed-up-%d\n  namespace: default\ndata:\n  i: %q\n", i, fmt.Sprint(i))
	}
	manifestFile := filepath.Join(t.TempDir(), "objects.yaml")
	writeFile(t, manifestFile, manifest.String())
	mustKubectl(t, inner, "apply", "-f", manifestFile)
	server := strings.TrimSpace(mustKubectl(t, inner, "config", "view", "-o", "jsonpath={.clusters[0].cluster.server}"))

	// file:// would be the operator pod's own file system.
	if stderr := hs.fails("--kubeconfig", mgmt, "backup", "cluster", "--name", "inner", "--to", "file:///var/backups/inner.bak", "--key-file", key); !strings.Contains(stderr, "file:// names a path in the operator's pod") {
		t.Errorf("backup to file:// on the kube runtime: %s, want the refusal naming the operator's pod", stderr)
	}

	start := time.Now()
	out := hs.mustEnv(env, "--kubeconfig", mgmt, "backup", "cluster", "--name", "inner", "--to", archive, "--key-file", key)
	t.Logf("backup through the operator's pod: %.1fs\n%s", time.Since(start).Seconds(), strings.TrimSpace(out))
	obj, err := backend.HeadObject("backups", "clusters/inner.bak")
	if err != nil {
		t.Fatalf("archive not in the bucket: %v", err)
	}
	t.Logf("archive: %d bytes", obj.Size)

	hs.must("--kubeconfig", mgmt, "destroy", "cluster", "--name", "inner", "--wait", "--timeout", "3m")
	const ns = "clusters-inner"
	eventually(t, 2*time.Minute, "namespace "+ns+" to be gone", func() error {
		if out, err := kubectl(t, mgmt, "get", "namespace", ns); err == nil {
			return fmt.Errorf("still there:\n%s", out)
		}
		return nil
	})
	if _, err := kubectl(t, inner, "get", "configmap", "kept"); err == nil {
		t.Fatal("the destroyed cluster still answers")
	}

	// The same archive as a local file: the CLI reads it, admission refuses
	// the restore before anything is created.
	sealed, err := backend.GetObject("backups", "clusters/inner.bak", nil)
	if err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(t.TempDir(), "inner.bak")
	data, err := io.ReadAll(sealed.Contents)
	_ = sealed.Contents.Close()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, local, string(data))
	if stderr := hs.fails("--kubeconfig", mgmt, "restore", "cluster", "--from", "file://"+local, "--key-file", key); !strings.Contains(stderr, "a file:// archive is not supported on the kube runtime") {
		t.Errorf("restore from file:// on the kube runtime: %s, want the admission policy's refusal", stderr)
	}
	if out, err := kubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", "inner"); err == nil {
		t.Fatalf("the refused restore created the cluster:\n%s", out)
	}

	// An empty volume: what etcd starts from is what the restore wrote.
	const volume = "inner-restored-etcd-0"
	makeHostPathVolume(t, mgmt, volume, class, filepath.Join(volumes, "restored-etcd-0"), "inner")
	start = time.Now()
	out = hs.mustEnv(env, "--kubeconfig", mgmt, "restore", "cluster", "--from", archive, "--key-file", key, "--timeout", "5m")
	t.Logf("restore → Available on the kube runtime: %.1fs\n%s", time.Since(start).Seconds(), strings.TrimSpace(out))

	if got := strings.TrimSpace(mustKubectl(t, mgmt, "-n", "clusters", "get", "hostedcluster", "inner", "-o",
		`jsonpath={.status.conditions[?(@.type=="Restored")].status} {.status.conditions[?(@.type=="Restored")].reason}`)); got != "True AsExpected" {
		t.Errorf("Restored condition %q, want True AsExpected (the endpoint %s kept)", got, server)
	}
	// The kubeconfig saved before the backup: same CA, client certificate
	// and server address.
	eventually(t, 2*time.Minute, "the saved kubeconfig to read every object back", func() error {
		out, err := kubectl(t, inner, "get", "configmaps", "-n", "default", "-o", "name")
		if err != nil {
			return err
		}
		if n := strings.Count(out, "configmap/backed-up-"); n != objects {
			return fmt.Errorf("%d of %d ConfigMaps", n, objects)
		}
		return nil
	})
	if v := mustKubectl(t, inner, "get", "configmap", "kept", "-o", "jsonpath={.data.k}"); v != "v" {
		t.Errorf("configmap kept holds %q, want v", v)
	}
	mustKubectl(t, inner, "create", "configmap", "after-restore", "--from-literal=k=v")

	logs := mustKubectl(t, mgmt, "-n", ns, "logs", "etcd-0", "-c", "restore-data")
	if !strings.Contains(logs, "restored /var/lib/hypershift/etcd/data from s3://backups/clusters/inner.bak") {
		t.Errorf("the restore container of etcd-0 did not report the restore:\n%s", logs)
	}
	eventually(t, time.Minute, "the restore Secret to be removed", func() error {
		if out, err := kubectl(t, mgmt, "-n", ns, "get", "secret", "etcd-restore"); err == nil {
			return fmt.Errorf("still there:\n%s", out)
		}
		return nil
	})
	if restarts := mustKubectl(t, mgmt, "-n", ns, "get", "pod", "etcd-0", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"); restarts != "0" {
		t.Errorf("etcd-0 restarted %s times after its restore", restarts)
	}
	if claim := mustKubectl(t, mgmt, "get", "pv", volume, "-o", "jsonpath={.spec.claimRef.name}"); claim != "data-etcd-0" {
		t.Errorf("the restored member's volume was bound by %q, want data-etcd-0", claim)
	}
	return volume
}

// bridgeIPv4 is the IPv4 address of the node's pod bridge.
func bridgeIPv4(t *testing.T) net.IP {
	t.Helper()
	iface, err := net.InterfaceByName(join.Bridge)
	if err != nil {
		t.Fatalf("the node's pod bridge %s: %v", join.Bridge, err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil {
			return ipnet.IP.To4()
		}
	}
	t.Fatalf("the node's pod bridge %s has no IPv4 address: %v", join.Bridge, addrs)
	return nil
}

// s3OnPodBridge serves an in-process S3 server with a bucket "backups" on
// the node's pod bridge: the bridge's address is this host's side of the
// pods' network, so the management cluster's pods reach it (and so does
// this host) and nothing outside the host does.
func s3OnPodBridge(t *testing.T) (*httptest.Server, *s3mem.Backend) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(bridgeIPv4(t).String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(gofakes3.New(backend).Server())
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, backend
}
