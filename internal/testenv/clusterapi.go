package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

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
	var lists []*unstructured.UnstructuredList
	for _, plural := range plurals {
		data, err := os.ReadFile(filepath.Join(m.CRDDir(), "cluster.x-k8s.io_"+plural+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(t.Context(), crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				l := &unstructured.UnstructuredList{}
				l.SetAPIVersion(crd.Spec.Group + "/" + v.Name)
				l.SetKind(crd.Spec.Names.ListKind)
				lists = append(lists, l)
			}
		}
	}
	Eventually(t, 30*time.Second, "Cluster API's kinds served", func() (bool, error) {
		for _, l := range lists {
			if err := c.List(t.Context(), l); err != nil {
				return false, nil //nolint:nilerr // not served yet
			}
		}
		return true, nil
	})
}
