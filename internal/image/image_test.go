package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"hypershift.dev/internal/release"
	"hypershift.dev/internal/release/releasetest"
)

// The saved image holds the binary, the CA roots, the users, /tmp and the
// releases with their modes, is tagged Ref() and starts the binary.
func TestWriteImage(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "hypershift")
	binary := bytes.Repeat([]byte("\x7fELF binary"), 1000)
	if err := os.WriteFile(exe, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("CA ROOTS"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(dir, "image.tar")
	f, err := os.Create(saved)
	if err != nil {
		t.Fatal(err)
	}
	releaseBinary := releasetest.Write(t, dir, "v1.36.3", "release binary")
	sums := releasetest.Sums("release binary")
	sum := sha256.Sum256([]byte("release binary"))
	releases := release.New(release.Release{Version: "v1.36.3", Binary: releaseBinary, SHA256: hex.EncodeToString(sum[:])})
	if err := Write(f, Options{Executable: exe, CABundle: ca, Releases: releases}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	tag, err := name.NewTag(Ref())
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(saved, &tag)
	if err != nil {
		t.Fatalf("the tarball has no image tagged %s: %v", Ref(), err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/hypershift" {
		t.Errorf("entrypoint %q, want [/hypershift]", got)
	}
	if len(cfg.Config.Cmd) != 0 {
		t.Errorf("cmd %q, want none (pods name the component)", cfg.Config.Cmd)
	}
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
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
	type file struct {
		mode    int64
		dir     bool
		content string
	}
	got := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		got[hdr.Name] = file{mode: hdr.Mode, dir: hdr.Typeflag == tar.TypeDir, content: string(data)}
	}
	want := map[string]file{
		"hypershift":                        {mode: 0o755, content: string(binary)},
		"etc/ssl/certs/ca-certificates.crt": {mode: 0o644, content: "CA ROOTS"},
		"etc/passwd":                        {mode: 0o644, content: passwd},
		"etc/group":                         {mode: 0o644, content: group},
		"tmp/":                              {mode: 0o1777, dir: true},
		"releases/v1.36.3/kubernetes":       {mode: 0o755, content: "release binary"},
		"releases/v1.36.3/SHA256SUMS":       {mode: 0o644, content: sums},
	}
	for path, w := range want {
		g, ok := got[path]
		if !ok {
			t.Errorf("image has no %s (has %v)", path, keys(got))
			continue
		}
		if g != w {
			t.Errorf("%s: mode %o dir %v (%d bytes), want mode %o dir %v (%d bytes)", path, g.mode, g.dir, len(g.content), w.mode, w.dir, len(w.content))
		}
	}
	for _, user := range []string{"root:x:0:0:", "nobody:x:65534:65534:"} {
		if !bytes.Contains([]byte(got["etc/passwd"].content), []byte(user)) {
			t.Errorf("/etc/passwd lacks %s", user)
		}
	}

	// The layer is stored uncompressed (fast to write and import).
	manifest := readManifest(t, saved)
	if len(manifest) != 1 || len(manifest[0].RepoTags) != 1 || manifest[0].RepoTags[0] != Ref() {
		t.Errorf("manifest.json %+v, want one image tagged %s", manifest, Ref())
	}
	if len(manifest) == 1 && (len(manifest[0].Layers) != 1 || filepath.Ext(manifest[0].Layers[0]) != ".tar") {
		t.Errorf("layers %v, want one uncompressed .tar", manifest[0].Layers)
	}
}

// Without a host CA bundle the image is still built, without one.
func TestWriteImageWithoutCABundle(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "hypershift")
	if err := os.WriteFile(exe, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := Build(Options{Executable: exe, CABundle: filepath.Join(dir, "missing.crt")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := img.Digest(); err != nil {
		t.Fatal(err)
	}
}

func TestRef(t *testing.T) {
	if _, err := name.NewTag(Ref()); err != nil {
		t.Errorf("Ref() %q is not a valid image name: %v", Ref(), err)
	}
	if want := "hypershift.dev/hypershift:"; Ref()[:len(want)] != want {
		t.Errorf("Ref() = %q, want %s<version>", Ref(), want)
	}
}

type manifestEntry struct {
	RepoTags []string
	Layers   []string
}

func readManifest(t *testing.T, path string) []manifestEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("no manifest.json: %v", err)
		}
		if hdr.Name == "manifest.json" {
			var m []manifestEntry
			if err := json.NewDecoder(tr).Decode(&m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A binary that needs the dynamic loader would fail in every pod (the
// image has no C library): building the image from one is refused.
func TestBuildRefusesADynamicallyLinkedBinary(t *testing.T) {
	const dynamic = "/bin/sh" // Debian's shell needs ld.so and libc
	if _, err := os.Stat(dynamic); err != nil {
		t.Skipf("no %s on this host: %v", dynamic, err)
	}
	_, err := Build(Options{Executable: dynamic, CABundle: filepath.Join(t.TempDir(), "missing.crt")})
	if err == nil || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("Build from %s: %v; want a refusal that says it is dynamically linked and how to build it static", dynamic, err)
	}
}
