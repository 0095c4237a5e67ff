package release_test

import (
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/release"
)

// TestDirFlagGivenMustExist: a --releases-dir that is given and missing is
// refused, naming the flag; an empty one holds the compiled-in release.
func TestDirFlagGivenMustExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := (&release.DirFlag{Dir: missing}).Load(); err == nil || !strings.HasPrefix(err.Error(), "--releases-dir "+missing+": ") {
		t.Errorf("a missing --releases-dir: error %v, want one naming the flag and %s", err, missing)
	}
	c, err := (&release.DirFlag{Dir: t.TempDir()}).Load()
	if err != nil || len(c.Versions()) != 1 {
		t.Errorf("an empty --releases-dir: %v (%v), want the compiled-in release only", c.Versions(), err)
	}
}
