package cloudmeta

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// fakeIMDS serves the documented paths of EC2's IMDSv2 and Azure's IMDS
// on loopback, and answers a request the real services refuse as they
// do: IMDSv2 without a session token 401, a token request without its
// TTL header 400; Azure without `Metadata: true` or without api-version
// 400; either with X-Forwarded-For (a proxied request) refused.
type fakeIMDS struct {
	mu sync.Mutex
	// aws: path under /latest/meta-data/ → value.
	aws map[string]string
	// azure: the compute document (marshalled) or, when set, raw.
	azure    map[string]any
	azureRaw string
	tokens   map[string]bool
	// override: path → status answered instead, count times (0: always).
	override      map[string]int
	overrideCount int
	requests      map[string]int
}

func newFakeIMDS(t *testing.T) (*fakeIMDS, string) {
	f := &fakeIMDS{
		aws: map[string]string{
			"instance-id":                 "i-0123456789abcdef0",
			"placement/availability-zone": "us-east-1a",
			"local-hostname":              "ip-10-0-1-23.ec2.internal",
			"placement/region":            "us-east-1",
			"hostname":                    "ip-10-0-1-23.ec2.internal",
			"public-hostname":             "ec2-203-0-113-25.compute-1.amazonaws.com",
		},
		azure: map[string]any{
			"name":              "MD-0-Abcde",
			"resourceId":        "/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/my-cluster/providers/Microsoft.Compute/virtualMachines/MD-0-Abcde",
			"location":          "westeurope",
			"vmId":              "02aab8a4-74ef-476e-8182-f6d2ba4166a6",
			"resourceGroupName": "my-cluster",
		},
		tokens:   map[string]bool{},
		requests: map[string]int{},
	}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeIMDS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests[r.Method+" "+r.URL.Path]++
	if code, ok := f.override[r.URL.Path]; ok && (f.overrideCount == 0 || f.requests[r.Method+" "+r.URL.Path] <= f.overrideCount) {
		http.Error(w, "overridden", code)
		return
	}
	switch {
	case r.URL.Path == "/latest/api/token":
		f.awsToken(w, r)
	case len(r.URL.Path) > len("/latest/meta-data/") && r.URL.Path[:len("/latest/meta-data/")] == "/latest/meta-data/":
		f.awsValue(w, r, r.URL.Path[len("/latest/meta-data/"):])
	case r.URL.Path == "/metadata/instance/compute":
		f.azureCompute(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeIMDS) awsToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(w, "", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("X-Forwarded-For") != "" {
		http.Error(w, "", http.StatusForbidden)
		return
	}
	ttl, err := strconv.Atoi(r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds"))
	if err != nil || ttl < 1 || ttl > 21600 {
		http.Error(w, "", http.StatusBadRequest)
		return
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	f.tokens[tok] = true
	w.Header().Set("X-aws-ec2-metadata-token-ttl-seconds", strconv.Itoa(ttl))
	_, _ = w.Write([]byte(tok))
}

func (f *fakeIMDS) awsValue(w http.ResponseWriter, r *http.Request, key string) {
	if r.Method != http.MethodGet {
		http.Error(w, "", http.StatusMethodNotAllowed)
		return
	}
	if !f.tokens[r.Header.Get("X-aws-ec2-metadata-token")] {
		http.Error(w, "", http.StatusUnauthorized)
		return
	}
	v, ok := f.aws[key]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte(v))
}

func (f *fakeIMDS) azureCompute(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Method != http.MethodGet || r.Header.Get("Metadata") != "true" || r.Header.Get("X-Forwarded-For") != "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error": "Bad request. Required metadata header not specified"}`))
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error": "Bad request. api-version was not specified in the request"}`))
		return
	}
	if f.azureRaw != "" {
		_, _ = w.Write([]byte(f.azureRaw))
		return
	}
	_ = json.NewEncoder(w).Encode(f.azure)
}

func (f *fakeIMDS) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[key]
}
