// Package releasetest lays out Kubernetes releases in a directory the way
// `make build` does, for tests of what loads them.
package releasetest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"hypershift.dev/internal/release"
)

// Write lays out dir/version/kubernetes with content and its SHA256SUMS,
// and returns the binary's path.
func Write(t testing.TB, dir, version, content string) string {
	t.Helper()
	vdir := filepath.Join(dir, version)
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(vdir, release.BinaryName)
	if err := os.WriteFile(bin, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vdir, release.SumsName), []byte(Sums(content)), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin
}

// Sums is the SHA256SUMS of a release binary of content.
func Sums(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:]) + "  " + release.BinaryName + "\n"
}
