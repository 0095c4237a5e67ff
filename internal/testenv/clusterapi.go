package testenv

import (
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterapi"
)

// InstallClusterAPICRDs creates Cluster API's CRDs of these plurals
// (clusters, machines, …), as `make build` copied them beside its manager
// (no Cluster API controller runs), and waits until c lists each kind.
func InstallClusterAPICRDs(t testing.TB, c client.Client, plurals ...string) {
	t.Helper()
	m := clusterapi.Manager{Dir: filepath.Join(filepath.Dir(Binary(t)), clusterapi.DirName)}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	files := make([]string, 0, len(plurals))
	for _, plural := range plurals {
		files = append(files, filepath.Join(m.CRDDir(), "cluster.x-k8s.io_"+plural+".yaml"))
	}
	InstallCRDFiles(t, c, files...)
}
