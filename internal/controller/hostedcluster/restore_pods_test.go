package hostedcluster

import (
	"strings"
	"testing"
)

// TestCheckPodsArchiveURL: on the kube runtime a file:// archive is refused
// (for backups and restores), naming the scheme and what to use instead.
func TestCheckPodsArchiveURL(t *testing.T) {
	for _, tt := range []struct {
		url     string
		refused bool
	}{
		{"file:///var/backups/a.bak", true},
		{"file:/var/backups/a.bak", true},
		{"s3://backups/a.bak?region=us-east-1", false},
	} {
		err := checkPodsArchiveURL(tt.url)
		if (err != nil) != tt.refused {
			t.Errorf("%s: %v, refused want %v", tt.url, err, tt.refused)
		}
		if err != nil && (!strings.Contains(err.Error(), "operator's pod") || !strings.Contains(err.Error(), "s3://")) {
			t.Errorf("%s: %v, want a message naming where file:// points and what to use", tt.url, err)
		}
	}
}
