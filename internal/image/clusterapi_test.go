package image

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/release"
)

// fakeClusterAPI writes a Cluster API directory as `make clusterapi` lays
// it out: the manager and two CRDs.
func fakeClusterAPI(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), clusterapi.DirName)
	mkdir(t, filepath.Join(dir, clusterapi.CRDDirName))
	for file, content := range map[string]string{
		clusterapi.BinaryName: "manager",
		filepath.Join(clusterapi.CRDDirName, "cluster.x-k8s.io_machines.yaml"): "machines",
		filepath.Join(clusterapi.CRDDirName, "cluster.x-k8s.io_clusters.yaml"): "clusters",
		filepath.Join(clusterapi.CRDDirName, "README"):                         "not a CRD",
	} {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// layerFiles are the entries of the image's only layer: content by path
// (directories end with /), and their modes.
func layerFiles(t *testing.T, opts Options) (map[string]string, map[string]int64) {
	t.Helper()
	img, err := Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	content, modes := map[string]string{}, map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return content, modes
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		content[hdr.Name], modes[hdr.Name] = string(data), hdr.Mode
	}
}

func imageOptions(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "hypershift")
	if err := os.WriteFile(exe, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{Executable: exe, CABundle: filepath.Join(dir, "missing.crt"), Releases: release.New()}
}

// hypershift's image holds Cluster API's manager and its CRDs under
// ClusterAPIDir, where clusterapi.Manager finds them.
func TestImageHoldsClusterAPIManager(t *testing.T) {
	opts := imageOptions(t)
	opts.ClusterAPIDir, opts.RequireClusterAPI = fakeClusterAPI(t), true
	content, modes := layerFiles(t, opts)

	m := clusterapi.Manager{Dir: ClusterAPIDir}
	if ClusterAPIDir != "/"+clusterapi.DirName {
		t.Errorf("ClusterAPIDir %s, want %s beside /hypershift (clusterapi.DefaultDir in the image)", ClusterAPIDir, clusterapi.DirName)
	}
	want := map[string]string{
		m.Path()[1:]: "manager",
		filepath.Join(m.CRDDir(), "cluster.x-k8s.io_clusters.yaml")[1:]: "clusters",
		filepath.Join(m.CRDDir(), "cluster.x-k8s.io_machines.yaml")[1:]: "machines",
	}
	for p, w := range want {
		if got, ok := content[p]; !ok || got != w {
			t.Errorf("%s: %q (present %v), want %q", p, got, ok, w)
		}
	}
	if modes[m.Path()[1:]] != 0o755 || modes[filepath.Join(m.CRDDir(), "cluster.x-k8s.io_machines.yaml")[1:]] != 0o644 {
		t.Errorf("modes %o, %o; want 755 for the manager, 644 for a CRD", modes[m.Path()[1:]], modes[filepath.Join(m.CRDDir(), "cluster.x-k8s.io_machines.yaml")[1:]])
	}
	for p := range content {
		if strings.HasSuffix(p, "README") {
			t.Errorf("the image has %s, which is not a CRD", p)
		}
	}
}

// A Cluster API directory without its manager is refused; a missing one
// too when it is required (`image save`), else the image has none (a
// node's join builds the image from a binary copied alone).
func TestImageWithoutClusterAPIManager(t *testing.T) {
	noBinary := fakeClusterAPI(t)
	if err := os.Remove(filepath.Join(noBinary, clusterapi.BinaryName)); err != nil {
		t.Fatal(err)
	}
	opts := imageOptions(t)
	opts.ClusterAPIDir = noBinary
	if _, err := Build(opts); err == nil || !strings.Contains(err.Error(), "no Cluster API manager") || !strings.Contains(err.Error(), "make build") {
		t.Errorf("a directory without the manager: %v, want an error that says it is missing and how to build it", err)
	}

	opts.ClusterAPIDir = filepath.Join(t.TempDir(), "missing")
	opts.RequireClusterAPI = true
	if _, err := Build(opts); err == nil || !strings.Contains(err.Error(), "no Cluster API manager") {
		t.Errorf("a required directory that is missing: %v, want an error", err)
	}

	opts.RequireClusterAPI = false
	content, _ := layerFiles(t, opts)
	for p := range content {
		if strings.HasPrefix(p, clusterapi.DirName) {
			t.Errorf("the image has %s with no Cluster API directory", p)
		}
	}
}
