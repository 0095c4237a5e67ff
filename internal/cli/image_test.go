package cli

import (
	"strings"
	"testing"
)

// `image save --machine` needs a file, and its help says what the machine
// image is for and what it is built from.
func TestImageSaveMachine(t *testing.T) {
	if _, err := run(t, "image", "save", "--machine"); err == nil || !strings.Contains(err.Error(), "-o FILE.tar is required") {
		t.Errorf("image save --machine without -o: %v, want -o required", err)
	}
	help, err := run(t, "image", "save", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--machine", "hypershift.dev/hypershift-machine:", "Debian packages", "does not need root", "/clusterapi"} {
		if !strings.Contains(help, want) {
			t.Errorf("image save --help lacks %q:\n%s", want, help)
		}
	}
}
