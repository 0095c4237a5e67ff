package v1alpha1_test

import (
	"strconv"
	"strings"
	"testing"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// TestRestoreRequestOf: no annotation is no request; a request needs its
// URL and Secret, and an error names the annotation and its value.
func TestRestoreRequestOf(t *testing.T) {
	if req, err := hypershiftv1alpha1.RestoreRequestOf(nil); req != nil || err != nil {
		t.Errorf("no annotation: %v, %v", req, err)
	}
	req, err := hypershiftv1alpha1.RestoreRequestOf(map[string]string{hypershiftv1alpha1.RestoreFromAnnotation: `{"url":"s3://b/a.bak","secret":"s","namespace":"ns"}`})
	if err != nil || req.URL != "s3://b/a.bak" || req.Secret != "s" || req.Namespace != "ns" {
		t.Errorf("a request: %+v, %v", req, err)
	}
	for _, raw := range []string{`not json`, `{"url":"s3://b/a.bak"}`, `{"secret":"s"}`} {
		if _, err := hypershiftv1alpha1.RestoreRequestOf(map[string]string{hypershiftv1alpha1.RestoreFromAnnotation: raw}); err == nil ||
			!strings.Contains(err.Error(), hypershiftv1alpha1.RestoreFromAnnotation) || !strings.Contains(err.Error(), strconv.Quote(raw)) {
			t.Errorf("%s: %v, want an error naming the annotation and the value", raw, err)
		}
	}
}
