package release_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"hypershift.dev/internal/release"
	"hypershift.dev/internal/release/releasetest"
	"hypershift.dev/internal/version"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	bin := releasetest.Write(t, dir, "v1.36.3", "release 1.36")
	releasetest.Write(t, dir, "v1.35.9", "release 1.35")
	c, err := release.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{version.KubernetesVersion, "v1.36.3", "v1.35.9"}
	if got := c.Versions(); !reflect.DeepEqual(got, want) {
		t.Errorf("Versions() = %v, want %v", got, want)
	}
	r, ok := c.Lookup("v1.36.3")
	if !ok || r.Binary != bin || r.CompiledIn() {
		t.Fatalf("Lookup(v1.36.3) = %+v, %v", r, ok)
	}
	if path, args := release.Command(r, "kube-apiserver"); path != bin || !reflect.DeepEqual(args, []string{"kube-apiserver"}) {
		t.Errorf("Command = %s %v, want the release binary and its subcommand", path, args)
	}
	compiled, ok := c.Lookup("")
	if !ok || !compiled.CompiledIn() || compiled.Version != version.KubernetesVersion {
		t.Fatalf(`Lookup("") = %+v, %v, want the compiled-in release`, compiled, ok)
	}
	if _, args := release.Command(compiled, "kube-scheduler"); !reflect.DeepEqual(args, []string{"component", "kube-scheduler"}) {
		t.Errorf("Command(compiled in) args = %v", args)
	}
	if _, ok := c.Lookup("v1.34.0"); ok {
		t.Error("Lookup of a version that is not there succeeded")
	}
}

func TestLoadRelativeDirGivesAbsoluteBinaries(t *testing.T) {
	dir := t.TempDir()
	bin := releasetest.Write(t, dir, "v1.36.3", "release 1.36")
	t.Chdir(dir)
	c, err := release.Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Lookup("v1.36.3"); r.Binary != bin {
		t.Errorf("binary %q, want the absolute %s: the runtime starts it from another directory", r.Binary, bin)
	}
}

func TestLoadMissingDirHoldsTheCompiledInRelease(t *testing.T) {
	c, err := release.Load(filepath.Join(t.TempDir(), "none"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Versions(); !reflect.DeepEqual(got, []string{version.KubernetesVersion}) {
		t.Errorf("Versions() = %v", got)
	}
	var nilCatalog *release.Catalog
	if got := nilCatalog.Versions(); !reflect.DeepEqual(got, []string{version.KubernetesVersion}) {
		t.Errorf("nil catalog Versions() = %v", got)
	}
}

func TestLoadRefusesTamperedBinary(t *testing.T) {
	dir := t.TempDir()
	bin := releasetest.Write(t, dir, "v1.36.3", "release 1.36")
	if err := os.WriteFile(bin, []byte("something else"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := release.Load(dir)
	if err == nil {
		t.Fatal("Load accepted a binary that does not match its SHA256SUMS")
	}
	if !strings.Contains(err.Error(), bin) {
		t.Errorf("error %q does not name the file %s", err, bin)
	}
}

func TestLoadRefusesIncompleteRelease(t *testing.T) {
	for name, prepare := range map[string]func(dir string){
		"no sums":   func(dir string) { _ = os.Remove(filepath.Join(dir, "v1.36.3", release.SumsName)) },
		"no binary": func(dir string) { _ = os.Remove(filepath.Join(dir, "v1.36.3", release.BinaryName)) },
		"not a version": func(dir string) {
			_ = os.Mkdir(filepath.Join(dir, "latest"), 0o755)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			releasetest.Write(t, dir, "v1.36.3", "release 1.36")
			prepare(dir)
			if _, err := release.Load(dir); err == nil {
				t.Fatal("Load succeeded")
			}
		})
	}
}

func TestLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"v1.36.3", "v1.37.1", true},
		{"v1.37.1", "v1.36.3", false},
		{"v1.9.0", "v1.10.0", true},
		{"v1.36.3", "v1.36.10", true},
		{"junk", "v1.0.0", true},
	} {
		if got := release.Less(tc.a, tc.b); got != tc.want {
			t.Errorf("Less(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
