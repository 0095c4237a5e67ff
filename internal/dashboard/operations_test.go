package dashboard

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

var testAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}

// change is a request of the pages' script: POST, the token's cookie, the
// dashboard's header, its own origin and a JSON body; mod breaks a rule.
func change(t *testing.T, h http.Handler, token, path, body string, mod func(*http.Request)) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Host = "127.0.0.1:8080"
	req.AddCookie(&http.Cookie{Name: "hypershift-dashboard-8080", Value: token})
	req.Header.Set(Header, "1")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Content-Type", "application/json")
	if mod != nil {
		mod(req)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A change is made only by the dashboard's own pages: a page of another
// site, which the browser lets send the cookie with a form or a simple
// request, cannot set the header nor a JSON body, and names its origin.
// Each case breaks one rule; the request that breaks none reaches the
// change, which refuses it for its empty name (400) without calling the
// management API.
func TestChangesComeOnlyFromTheDashboardsPages(t *testing.T) {
	s := &Server{token: NewToken(), log: logr.Discard()}
	h := s.Handler(testAddr)
	const path, body = "/api/cluster/hibernate", `{"namespace": "clusters", "name": ""}`
	for _, tt := range []struct {
		name string
		path string
		body string
		mod  func(*http.Request)
		want int
		text string // in the answer; by default, for 400, the change's own refusal
	}{
		{name: "every rule kept", want: http.StatusBadRequest},
		{name: "localhost's origin", mod: func(r *http.Request) { r.Header.Set("Origin", "http://localhost:8080") }, want: http.StatusBadRequest},
		{name: "no Origin (an older browser, a script)", mod: func(r *http.Request) { r.Header.Del("Origin"); r.Header.Del("Sec-Fetch-Site") }, want: http.StatusBadRequest},
		{name: "the bearer token instead of the cookie", mod: func(r *http.Request) {
			r.Header.Del("Cookie")
			r.Header.Set("Authorization", "Bearer "+s.token)
		}, want: http.StatusBadRequest},
		{name: "no token", mod: func(r *http.Request) { r.Header.Del("Cookie") }, want: http.StatusUnauthorized},
		{name: "a wrong token", mod: func(r *http.Request) {
			r.Header.Del("Cookie")
			r.AddCookie(&http.Cookie{Name: "hypershift-dashboard-8080", Value: "guess"})
		}, want: http.StatusUnauthorized},
		{name: "no dashboard header", mod: func(r *http.Request) { r.Header.Del(Header) }, want: http.StatusForbidden},
		{name: "a wrong dashboard header", mod: func(r *http.Request) { r.Header.Set(Header, "yes") }, want: http.StatusForbidden},
		{name: "another site's origin", mod: func(r *http.Request) { r.Header.Set("Origin", "http://attacker.example") }, want: http.StatusForbidden},
		{name: "another port's origin", mod: func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:8081") }, want: http.StatusForbidden},
		{name: "an https origin", mod: func(r *http.Request) { r.Header.Set("Origin", "https://127.0.0.1:8080") }, want: http.StatusForbidden},
		{name: "the null origin", mod: func(r *http.Request) { r.Header.Set("Origin", "null") }, want: http.StatusForbidden},
		{name: "a cross-site fetch", mod: func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, want: http.StatusForbidden},
		{name: "a same-site fetch", mod: func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }, want: http.StatusForbidden},
		{name: "a form", mod: func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, want: http.StatusUnsupportedMediaType},
		{name: "a multipart form", mod: func(r *http.Request) { r.Header.Set("Content-Type", "multipart/form-data; boundary=x") }, want: http.StatusUnsupportedMediaType},
		{name: "text/plain", mod: func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, want: http.StatusUnsupportedMediaType},
		{name: "no content type", mod: func(r *http.Request) { r.Header.Del("Content-Type") }, want: http.StatusUnsupportedMediaType},
		{name: "GET", mod: func(r *http.Request) { r.Method = http.MethodGet }, want: http.StatusMethodNotAllowed},
		{name: "PUT", mod: func(r *http.Request) { r.Method = http.MethodPut }, want: http.StatusMethodNotAllowed},
		{name: "a body over 64 KiB", body: `{"namespace": "` + strings.Repeat("a", 70<<10) + `", "name": ""}`, want: http.StatusRequestEntityTooLarge},
		{name: "an unknown field", body: `{"name": "", "enabled": true}`, want: http.StatusBadRequest, text: `unknown field "enabled"`},
		{name: "two JSON values", body: `{"name": ""} {"name": "b"}`, want: http.StatusBadRequest, text: "more than one JSON value"},
		{name: "not JSON", body: `name=a`, want: http.StatusBadRequest, text: "invalid character"},
		{name: "another Host", mod: func(r *http.Request) { r.Host = "rebound.example:8080" }, want: http.StatusMisdirectedRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, b := path, body
			if tt.path != "" {
				p = tt.path
			}
			if tt.body != "" {
				b = tt.body
			}
			rec := change(t, h, s.token, p, b, tt.mod)
			text := tt.text
			if text == "" && tt.want == http.StatusBadRequest {
				text = "name the hosted cluster"
			}
			if got := strings.TrimSpace(rec.Body.String()); rec.Code != tt.want || !strings.Contains(got, text) {
				t.Errorf("%d %q, want %d %q", rec.Code, got, tt.want, text)
			}
		})
	}
	// Every change endpoint takes POST only.
	for _, p := range []string{"/api/clusters", "/api/cluster/hibernate", "/api/cluster/resume", "/api/cluster/upgrade", "/api/cluster/rotate-ca", "/api/nodepool/scale"} {
		if rec := change(t, h, s.token, p, "{}", func(r *http.Request) { r.Method = http.MethodGet }); rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d, want 405", p, rec.Code)
		}
		if rec := change(t, h, s.token, p, "{}", func(r *http.Request) { r.Header.Del(Header) }); rec.Code != http.StatusForbidden {
			t.Errorf("POST %s without the header: %d, want 403", p, rec.Code)
		}
	}
}

// Each change is the command's request, made with the dashboard's client:
// it does what the command does on a real management API, and what the
// API server refuses is answered with its status and message as they are.
func TestChangesOnTheManagementAPI(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	serve := func(cfg *rest.Config) (http.Handler, string) {
		s, err := New(Options{Config: cfg, Log: logr.Discard()})
		if err != nil {
			t.Fatal(err)
		}
		return s.Handler(testAddr), s.token
	}
	h, token := serve(env.FastConfig())
	post := func(path, body string, want int) string {
		t.Helper()
		rec := change(t, h, token, path, body, nil)
		if rec.Code != want {
			t.Fatalf("POST %s %s: %d %q, want %d", path, body, rec.Code, strings.TrimSpace(rec.Body.String()), want)
		}
		return strings.TrimSpace(rec.Body.String())
	}
	c := env.Client
	key := client.ObjectKey{Namespace: "clusters", Name: "a"}
	hostedCluster := func() *hypershiftv1alpha1.HostedCluster {
		t.Helper()
		hc := &hypershiftv1alpha1.HostedCluster{}
		if err := c.Get(ctx, key, hc); err != nil {
			t.Fatal(err)
		}
		return hc
	}

	// create: the command's objects, its checks and the API server's.
	out := post("/api/clusters", `{"platform": "simulated", "name": "a", "nodePoolReplicas": 2}`, http.StatusOK)
	var res Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Message != "hostedcluster clusters/a created; nodepool clusters/a created" {
		t.Errorf("create answered %s (%v)", out, err)
	}
	hc := hostedCluster()
	if hc.Spec.Platform.Type != hypershiftv1alpha1.SimulatedPlatform || hc.Spec.KubernetesVersion != version.KubernetesVersion ||
		hc.Spec.ControllerAvailabilityPolicy != hypershiftv1alpha1.SingleReplica || hc.Spec.Services[0].Type != hypershiftv1alpha1.HostPort {
		t.Errorf("created spec %+v: want the command's defaults", hc.Spec)
	}
	np := &hypershiftv1alpha1.NodePool{}
	if err := c.Get(ctx, key, np); err != nil || np.Spec.Replicas == nil || *np.Spec.Replicas != 2 || np.Spec.ClusterName != "a" {
		t.Fatalf("nodepool %+v (%v): want 2 replicas of cluster a", np.Spec, err)
	}
	if got := post("/api/clusters", `{"platform": "simulated", "name": "a"}`, http.StatusConflict); !strings.Contains(got, "clusters/a already exists") {
		t.Errorf("a second a: %q", got)
	}
	if got := post("/api/clusters", `{"platform": "none", "name": "b", "availabilityPolicy": "Triple"}`, http.StatusUnprocessableEntity); !strings.Contains(got, "controllerAvailabilityPolicy") {
		t.Errorf("the API server's refusal of an availability policy: %q, want its message", got)
	}
	if got := post("/api/clusters", `{"platform": "host", "name": "b"}`, http.StatusBadRequest); !strings.Contains(got, "none or simulated") {
		t.Errorf("platform host: %q", got)
	}
	if got := post("/api/clusters", `{"platform": "none"}`, http.StatusUnprocessableEntity); !strings.Contains(got, "--name is required") {
		t.Errorf("no name: %q, want the command's check", got)
	}

	// scale: the pool's scale subresource.
	post("/api/nodepool/scale", `{"namespace": "clusters", "name": "a", "replicas": 3}`, http.StatusOK)
	if err := c.Get(ctx, key, np); err != nil || *np.Spec.Replicas != 3 {
		t.Errorf("after scaling to 3: %v replicas (%v)", *np.Spec.Replicas, err)
	}
	if got := post("/api/nodepool/scale", `{"name": "nothere", "replicas": 1}`, http.StatusNotFound); !strings.Contains(got, `"nothere" not found`) {
		t.Errorf("scaling a pool that is not there: %q", got)
	}

	// hibernate and resume: spec.hibernation.enabled.
	post("/api/cluster/hibernate", `{"namespace": "clusters", "name": "a"}`, http.StatusOK)
	if h := hostedCluster().Spec.Hibernation; h == nil || !h.Enabled {
		t.Errorf("after hibernate: spec.hibernation %+v", h)
	}
	post("/api/cluster/resume", `{"namespace": "clusters", "name": "a"}`, http.StatusOK)
	if h := hostedCluster().Spec.Hibernation; h == nil || h.Enabled {
		t.Errorf("after resume: spec.hibernation %+v", h)
	}
	post("/api/cluster/hibernate", `{"name": "nothere"}`, http.StatusNotFound)

	// upgrade: spec.kubernetesVersion, with the API server's rules.
	if got := post("/api/cluster/upgrade", `{"name": "a", "kubernetesVersion": "v2"}`, http.StatusUnprocessableEntity); !strings.Contains(got, "spec.kubernetesVersion must be a Kubernetes version") {
		t.Errorf("version v2: %q, want the CRD rule's message", got)
	}
	if got := post("/api/cluster/upgrade", `{"name": "a", "kubernetesVersion": "v1.36.3"}`, http.StatusUnprocessableEntity); !strings.Contains(got, "downgrade") {
		t.Errorf("an older minor: %q, want the transition rule's message", got)
	}
	post("/api/cluster/upgrade", `{"name": "a", "kubernetesVersion": "`+version.KubernetesVersion+`"}`, http.StatusOK)

	// rotate CA: spec.certificates.rotateCA, refused while one runs.
	post("/api/cluster/rotate-ca", `{"name": "a"}`, http.StatusOK)
	hc = hostedCluster()
	if hc.Spec.Certificates == nil || hc.Spec.Certificates.RotateCA == "" {
		t.Fatalf("after rotate-ca: spec.certificates %+v", hc.Spec.Certificates)
	}
	hc.Status.Certificates = &hypershiftv1alpha1.CertificatesStatus{CARotation: &hypershiftv1alpha1.CARotationStatus{
		Token: hc.Spec.Certificates.RotateCA, Phase: hypershiftv1alpha1.CARotationTrustBoth, StartedAt: metav1.Now(), PhaseSince: metav1.Now(),
	}}
	if err := c.Status().Update(ctx, hc); err != nil {
		t.Fatal(err)
	}
	if got := post("/api/cluster/rotate-ca", `{"name": "a"}`, http.StatusConflict); !strings.Contains(got, "rotating its CAs already") {
		t.Errorf("a second rotation while one runs: %q", got)
	}

	// The kubeconfig's authority, nothing more: a user without RBAC gets
	// the API server's 403.
	viewer := rest.CopyConfig(env.FastConfig())
	viewer.Impersonate = rest.ImpersonationConfig{UserName: "viewer"}
	h, token = serve(viewer)
	for path, body := range map[string]string{
		"/api/cluster/hibernate": `{"name": "a"}`,
		"/api/nodepool/scale":    `{"name": "a", "replicas": 0}`,
		"/api/clusters":          `{"platform": "none", "name": "c"}`,
	} {
		if got := post(path, body, http.StatusForbidden); !strings.Contains(got, `User "viewer" cannot`) {
			t.Errorf("%s as viewer: %q, want the API server's message", path, got)
		}
	}
	if hostedCluster().Spec.Hibernation.Enabled {
		t.Error("the viewer hibernated the cluster")
	}
}
