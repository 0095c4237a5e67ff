package runtime

import (
	"strings"
	"testing"
)

// TestRestoreFilesArePlainNames: a restore's files are Secret keys, which
// both runtimes put in a directory of their own; a name that would leave
// it, or that no Secret could hold, is refused.
func TestRestoreFilesArePlainNames(t *testing.T) {
	for _, name := range []string{"url", "file-root", "key", "AWS_ACCESS_KEY_ID", ".dockerconfigjson", strings.Repeat("k", 253)} {
		if err := (&Restore{Files: []File{{Path: name}}}).Validate(); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", "../x", "/etc/passwd", "a b", strings.Repeat("k", 254)} {
		if err := (&Restore{Files: []File{{Path: "url"}, {Path: name}}}).Validate(); err == nil || !strings.Contains(err.Error(), "plain file name") {
			t.Errorf("%q: %v, want it refused", name, err)
		}
	}
	var none *Restore
	if err := none.Validate(); err != nil {
		t.Errorf("no restore: %v", err)
	}
}
