package clusterapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/clusterapi"
)

const crdDoc = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.cluster.x-k8s.io
spec:
  group: cluster.x-k8s.io
  names: {kind: K, plural: %s}
  scope: Namespaced
  versions: [{name: v1beta2, served: true, storage: true}]
`

// TestCRDs: the CRDs of the manager's directory are read in the order of
// their files, every document of a file (empty ones skipped); a document
// that is not a CRD, or a directory without CRDs, is an error naming it.
func TestCRDs(t *testing.T) {
	crd := func(plural string) string { return strings.ReplaceAll(crdDoc, "%s", plural) }
	dir := func(files map[string]string) clusterapi.Manager {
		m := clusterapi.Manager{Dir: t.TempDir()}
		if err := os.MkdirAll(m.CRDDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(m.CRDDir(), name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	m := dir(map[string]string{
		"b.yaml":      "---\n" + crd("machines") + "---\n" + crd("machinesets") + "---\n",
		"a.yaml":      crd("clusters"),
		"notes.txt":   "not a CRD file",
		"empty.yaml":  "---\n",
		"zz.yaml.bak": "ignored",
	})
	crds, err := m.CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range crds {
		got = append(got, c.Name)
	}
	if want := "clusters.cluster.x-k8s.io machines.cluster.x-k8s.io machinesets.cluster.x-k8s.io"; strings.Join(got, " ") != want {
		t.Errorf("CRDs %v, want %s", got, want)
	}

	bad := dir(map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
	if _, err := bad.CRDs(); err == nil || !strings.Contains(err.Error(), "a.yaml: a ConfigMap, not a CustomResourceDefinition") {
		t.Errorf("a ConfigMap among the CRDs: %v, want an error naming its file", err)
	}
	none := dir(nil)
	if _, err := none.CRDs(); err == nil || !strings.Contains(err.Error(), "no Cluster API CRDs in "+none.CRDDir()) {
		t.Errorf("no CRDs: %v, want an error naming %s", err, none.CRDDir())
	}
}
