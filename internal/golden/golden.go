// Package golden compares what a test renders with a golden file under
// testdata. `go test -update` (make update-golden) rewrites the files; the
// diff is then reviewed like code.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Check fails t when got differs from the golden file at path, showing what
// was rendered; with -update it writes got there first.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil { //nolint:gosec // golden files are checked in, world-readable
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `make update-golden`)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from what is rendered now (run `make update-golden` and review the diff):\n%s", path, got)
	}
}
