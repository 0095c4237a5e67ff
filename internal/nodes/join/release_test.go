package join

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/releaseserver"
)

func TestFetchRelease(t *testing.T) {
	binary := []byte("release v1.36.3 binary")
	sum := sha256.Sum256(binary)
	want := hex.EncodeToString(sum[:])
	var requests atomic.Int32
	// alter, when set, changes the bytes on the way (an interceptor, or a
	// release server that is not the cluster's), keeping the header.
	var alter atomic.Bool
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != releaseserver.Path("v1.36.3") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set(releaseserver.SHA256Header, want)
		body := binary
		if alter.Load() {
			body = []byte(strings.Replace(string(binary), "binary", "BINARY", 1))
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	info := bootstrap.ReleasesInfo{URL: srv.URL, SHA256: map[string]string{"v1.36.3": want}}
	dest := filepath.Join(t.TempDir(), "releases", "v1.36.3", "kubernetes")

	alter.Store(true)
	err := FetchRelease(t.Context(), srv.Client(), info, "v1.36.3", dest)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), want) {
		t.Fatalf("altered download: err %v, want a refusal naming the published sha256", err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("altered download left %s (%v)", dest, err)
	}
	if left, _ := os.ReadDir(filepath.Dir(dest)); len(left) != 0 {
		t.Fatalf("altered download left files: %v", left)
	}

	alter.Store(false)
	if err := FetchRelease(t.Context(), srv.Client(), info, "v1.36.3", dest); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); string(got) != string(binary) || st.Mode().Perm() != 0o755 {
		t.Fatalf("installed %q mode %v, want the release, 0755", got, st.Mode().Perm())
	}

	// Cached: no second download; a damaged cache is fetched again.
	before := requests.Load()
	if err := FetchRelease(t.Context(), srv.Client(), info, "v1.36.3", dest); err != nil || requests.Load() != before {
		t.Fatalf("cached release fetched again (err %v, %d requests)", err, requests.Load()-before)
	}
	if err := os.WriteFile(dest, []byte("damaged"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := FetchRelease(t.Context(), srv.Client(), info, "v1.36.3", dest); err != nil || requests.Load() != before+1 {
		t.Fatalf("damaged cache: err %v, %d requests", err, requests.Load()-before)
	}

	err = FetchRelease(t.Context(), srv.Client(), info, "v1.35.0", filepath.Join(t.TempDir(), "k"))
	if err == nil || !strings.Contains(err.Error(), "v1.36.3") {
		t.Fatalf("unpublished version: %v, want an error naming the published ones", err)
	}
}

func TestParseReleasesInfo(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	info, err := bootstrap.ParseReleasesInfo(map[string]string{"url": "https://192.0.2.1:30443", "sha256.v1.36.3": sum})
	if err != nil || info.SHA256["v1.36.3"] != sum || info.URL != "https://192.0.2.1:30443" {
		t.Fatalf("%+v %v", info, err)
	}
	for _, bad := range []map[string]string{
		{"url": "http://192.0.2.1:30443"},
		{"url": "https://192.0.2.1:30443", "sha256.v1.36.3": "xyz"},
	} {
		if _, err := bootstrap.ParseReleasesInfo(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
