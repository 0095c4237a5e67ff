package testenv

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Cluster API infrastructure providers whose CRDs contract tests install.
const (
	// CAPA's, copied by `make build` from its Go module to
	// bin/provider-crds/aws.
	ProviderAWS = "aws"
	// CAPK's and CAPZ's, whose modules the module proxy does not serve:
	// their CRDs are kept unchanged beside the repository, in
	// ../shared/crds (HYPERSHIFT_PROVIDER_CRDS names another place).
	ProviderKubeVirt = "cluster-api-provider-kubevirt"
	ProviderAzure    = "cluster-api-provider-azure"
)

// ProviderCRDDir is the directory of a provider's CRDs, or "" when this
// checkout has none (a clone without ../shared beside it).
func ProviderCRDDir(t testing.TB, provider string) string {
	t.Helper()
	var dir string
	if provider == ProviderAWS {
		dir = filepath.Join(filepath.Dir(Binary(t)), "provider-crds", provider)
	} else {
		root := os.Getenv("HYPERSHIFT_PROVIDER_CRDS")
		if root == "" {
			_, file, _, _ := runtime.Caller(0) //nolint:dogsled // only the file is needed
			root = filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "crds")
		}
		dir = filepath.Join(root, provider)
	}
	if _, err := os.Stat(dir); err != nil { //nolint:gosec // a test's own checkout
		return ""
	}
	return dir
}

// InstallCRDFiles creates the CRDs of these files, as they are (no
// webhook runs), and waits until c lists each kind at its storage version.
func InstallCRDFiles(t testing.TB, c client.Client, files ...string) {
	t.Helper()
	var lists []*unstructured.UnstructuredList
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crd.Spec.Conversion = nil // no conversion webhook runs
		if err := c.Create(t.Context(), crd); err != nil {
			t.Fatalf("%s: %v", f, err)
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
	Eventually(t, 30*time.Second, "the CRDs' kinds served", func() (bool, error) {
		for _, l := range lists {
			if err := c.List(t.Context(), l); err != nil {
				return false, nil //nolint:nilerr // not served yet
			}
		}
		return true, nil
	})
}
