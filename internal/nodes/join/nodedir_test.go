package join

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// --node-dir is made absolute and symlink-free, in its existing prefix too:
// reset compares it with mount points, which the kernel reports resolved.
func TestCanonicalDir(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	cases := map[string]string{
		filepath.Join(base, "link"):                 real,
		filepath.Join(base, "link", "node"):         filepath.Join(real, "node"),
		filepath.Join(base, "link", "a", "b", ".."): filepath.Join(real, "a"),
		"link/node":  filepath.Join(real, "node"),
		"./new/node": filepath.Join(base, "new", "node"),
	}
	for in, want := range cases {
		got, err := CanonicalDir(in)
		if err != nil || got != want {
			t.Errorf("CanonicalDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := CanonicalDir(""); err == nil || !strings.Contains(err.Error(), "--node-dir") {
		t.Errorf("CanonicalDir(\"\") = %v, want an error naming --node-dir", err)
	}
}

// A join uses a new, empty or marked directory and refuses one with
// someone else's files, touching nothing in it.
func TestNodeDirMarker(t *testing.T) {
	base := t.TempDir()
	foreign := filepath.Join(base, "foreign")
	if err := os.MkdirAll(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(foreign, "data"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := createNodeDir(foreign)
	if err == nil || !strings.Contains(err.Error(), "--node-dir "+foreign+" is not empty") || !strings.Contains(err.Error(), markerName) {
		t.Fatalf("createNodeDir(non-empty foreign dir) = %v, want a refusal naming --node-dir and the marker", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, markerName)); err == nil {
		t.Error("the refused join wrote its marker into the foreign directory")
	}
	if _, err := Preflight(foreign, DefaultKubeletPort); err == nil {
		t.Error("Preflight accepted a non-empty foreign directory")
	}
	if err := Reset(t.Context(), &Node{DataDir: foreign}, logr.Discard()); err == nil || !strings.Contains(err.Error(), "not made by `hypershift join`") {
		t.Errorf("Reset of an unmarked directory = %v, want a refusal", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "data")); err != nil {
		t.Errorf("the foreign file is gone: %v", err)
	}

	for _, dir := range []string{filepath.Join(base, "new", "node"), filepath.Join(base, "empty")} {
		if dir == filepath.Join(base, "empty") {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := createNodeDir(dir); err != nil {
			t.Fatalf("createNodeDir(%s) = %v", dir, err)
		}
		if !hasMarker(dir) {
			t.Errorf("%s has no marker after createNodeDir", dir)
		}
		// An earlier join's directory (marked, with files) is accepted again.
		if err := os.WriteFile(filepath.Join(dir, "node.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := createNodeDir(dir); err != nil {
			t.Errorf("createNodeDir(marked %s) = %v", dir, err)
		}
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkNodeDir(file); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("checkNodeDir(file) = %v", err)
	}
}

// A host with another node's pod bridge is refused, naming the bridge and
// how to undo the other node; other links do not count.
func TestPreflightRefusesAnotherNodesBridge(t *testing.T) {
	sys := t.TempDir()
	for _, link := range []string{"lo", "eth0", "cni0", "hs-cni0x"} {
		if err := os.Mkdir(filepath.Join(sys, link), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkNoPodBridge(sys); err != nil {
		t.Fatalf("links of others: %v", err)
	}
	// /sys/class/net holds links as symlinks.
	if err := os.Symlink("../../devices/virtual/net/"+Bridge, filepath.Join(sys, Bridge)); err != nil {
		t.Fatal(err)
	}
	err := checkNoPodBridge(sys)
	if err == nil || !strings.Contains(err.Error(), "pod bridge "+Bridge+" of another node") || !strings.Contains(err.Error(), "join --reset") {
		t.Fatalf("with %s: %v; want a refusal naming it and the reset", Bridge, err)
	}
}
