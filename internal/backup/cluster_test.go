package backup

import (
	"sort"
	"strings"
	"testing"
)

func TestRestoredPoolName(t *testing.T) {
	for _, tc := range []struct{ pool, old, new, want string }{
		{"a", "a", "a", "a"},
		{"a", "a", "b", "b"},
		{"a-workers", "a", "b", "b-workers"},
		{"gpu", "a", "b", "b-gpu"},
		{"ab", "a", "b", "b-ab"},
	} {
		if got := restoredPoolName(tc.pool, tc.old, tc.new); got != tc.want {
			t.Errorf("restoredPoolName(%q, %q, %q) = %q, want %q", tc.pool, tc.old, tc.new, got, tc.want)
		}
	}
}

// TestRequestSecretData puts only the URL scheme's credentials from the
// environment into the request Secret.
func TestRequestSecretData(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AZURE_STORAGE_ACCOUNT", "acct")
	t.Setenv("AZURE_STORAGE_KEY", "a2V5")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS_JSON", `{"type":"service_account"}`)
	key := []byte("0123456789abcdef0123456789abcdef")
	for rawURL, want := range map[string]string{
		"file:///b/a.bak":                "key",
		"s3://b/a.bak?region=us-east-1":  "AWS_ACCESS_KEY_ID,AWS_SECRET_ACCESS_KEY,key",
		"gs://b/a.bak":                   "GOOGLE_APPLICATION_CREDENTIALS_JSON,key",
		"azblob://c/a.bak?protocol=http": "AZURE_STORAGE_ACCOUNT,AZURE_STORAGE_KEY,key",
	} {
		data, err := RequestSecretData(rawURL, key)
		if err != nil {
			t.Fatalf("%s: %v", rawURL, err)
		}
		var got []string
		for k := range data {
			got = append(got, k)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != want {
			t.Errorf("%s: Secret keys %v, want %s", rawURL, got, want)
		}
	}
	t.Setenv("AZURE_STORAGE_KEY", "")
	t.Setenv("AZURE_STORAGE_SAS_TOKEN", "")
	if _, err := RequestSecretData("azblob://c/a.bak", key); err == nil || !strings.Contains(err.Error(), "AZURE_STORAGE_ACCOUNT needs AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN") {
		t.Errorf("an account without key: %v", err)
	}
}
