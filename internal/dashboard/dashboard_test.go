package dashboard

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Only requests addressed to the dashboard's own address (or localhost on
// loopback) are served: a page elsewhere cannot reach it through a DNS name
// rebound to 127.0.0.1.
func TestGuardChecksTheHostHeader(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h := guard(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, ok)
	for host, want := range map[string]int{
		"127.0.0.1:8080":       http.StatusOK,
		"localhost:8080":       http.StatusOK,
		"127.0.0.1":            http.StatusOK,
		"attacker.example:80":  http.StatusMisdirectedRequest,
		"rebound.example:8080": http.StatusMisdirectedRequest,
		"10.0.0.1:8080":        http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
		if want == http.StatusOK && rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("Host %s: no Content-Security-Policy", host)
		}
	}
	// On another address, localhost is not the dashboard.
	h = guard(&net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 8080}, ok)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "localhost:8080"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("localhost on a non-loopback dashboard: %d", rec.Code)
	}
}

func histogramOf(verb string, count uint64, sum float64) *dto.Metric {
	return &dto.Metric{
		Label:     []*dto.LabelPair{{Name: proto.String("verb"), Value: proto.String(verb)}},
		Histogram: &dto.Histogram{SampleCount: proto.Uint64(count), SampleSum: proto.Float64(sum)},
	}
}

// The chart's latency is the mean of the requests between two samples,
// without WATCH and CONNECT; samples older than an hour are dropped.
func TestHistoryLatencyAndWindow(t *testing.T) {
	h := newHistory()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	family := func(getCount uint64, getSum float64) map[string]*dto.MetricFamily {
		return map[string]*dto.MetricFamily{"apiserver_request_duration_seconds": {
			Type:   dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{histogramOf("GET", getCount, getSum), histogramOf("WATCH", 1000, 9999)},
		}}
	}
	totals, ok := requestTotals(family(10, 1))
	h.add("a", Sample{At: t0}, totals, ok)
	totals, ok = requestTotals(family(30, 2))
	h.add("a", Sample{At: t0.Add(time.Minute), Restarts: 2}, totals, ok)
	h.add("a", Sample{At: t0.Add(2 * time.Minute)}, latencyTotals{}, false)
	got := h.of("a")
	if len(got) != 3 || got[0].LatencyMillis != nil || got[2].LatencyMillis != nil {
		t.Fatalf("samples %+v: want 3, latency only on the second", got)
	}
	if ms := *got[1].LatencyMillis; ms < 49.9 || ms > 50.1 {
		t.Errorf("latency %v ms, want 50 (1 s over 20 requests)", ms)
	}
	h.add("a", Sample{At: t0.Add(62 * time.Minute)}, latencyTotals{}, false)
	if got := h.of("a"); len(got) != 2 || !got[0].At.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("after an hour: %+v, want the samples of the last hour", got)
	}
	h.forget(map[string]bool{})
	if len(h.of("a")) != 0 {
		t.Error("a deleted cluster's history was kept")
	}
}

func TestFleetIsSortedAndShowsConditions(t *testing.T) {
	hc := func(ns, name string, degraded metav1.ConditionStatus) hypershiftv1alpha1.HostedCluster {
		c := hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		c.Status.Conditions = []metav1.Condition{{Type: "Degraded", Status: degraded, Reason: "R", Message: "m"}}
		return c
	}
	f := fleetOf([]hypershiftv1alpha1.HostedCluster{hc("b", "x", "False"), hc("a", "z", "True"), hc("a", "y", "False")}, time.Now())
	var order []string
	for _, r := range f.Clusters {
		order = append(order, r.Namespace+"/"+r.Name)
	}
	if len(order) != 3 || order[0] != "a/y" || order[1] != "a/z" || order[2] != "b/x" {
		t.Errorf("order %v", order)
	}
	if f.Clusters[1].Degraded.Status != "True" || f.Clusters[1].Available.Status != "Unknown" {
		t.Errorf("a/z: degraded %+v available %+v", f.Clusters[1].Degraded, f.Clusters[1].Available)
	}
}

// Every request needs the dashboard's token: once in the URL (which sets
// an HttpOnly, same-site cookie and redirects without it), then in the
// cookie or a bearer header. Other users of the machine reach its loopback
// port too.
func TestDashboardNeedsItsToken(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	token := NewToken()
	if len(token) < 40 || token == NewToken() {
		t.Fatalf("token %q: want a long random one", token)
	}
	h := guard(addr, requireToken(token, addr, ok))
	get := func(target string, mod func(*http.Request)) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Host = "127.0.0.1:8080"
		if mod != nil {
			mod(req)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for name, mod := range map[string]func(*http.Request){
		"nothing":                  nil,
		"another dashboard's":      func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "hypershift-dashboard-8081", Value: token}) },
		"a wrong cookie":           func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "hypershift-dashboard-8080", Value: "guess"}) },
		"a wrong bearer":           func(r *http.Request) { r.Header.Set("Authorization", "Bearer guess") },
		"the token without Bearer": func(r *http.Request) { r.Header.Set("Authorization", token) },
	} {
		if rec := get("/api/fleet", mod); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, rec.Code)
		}
	}
	if rec := get("/?token=guess", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("a wrong token in the URL: %d, want 401", rec.Code)
	}
	rec := get("/cluster?name=a&token="+token, nil)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/cluster?name=a" {
		t.Fatalf("the token in the URL: %d to %q, want 303 to /cluster?name=a", rec.Code, rec.Header().Get("Location"))
	}
	// The redirect stays on this host.
	for _, path := range []string{"//evil.example/x", "/\\evil.example/x"} {
		if rec := get(path+"?token="+token, nil); rec.Header().Get("Location") != "/evil.example/x" {
			t.Errorf("%s with the token: redirected to %q, want /evil.example/x on this host", path, rec.Header().Get("Location"))
		}
	}
	cookies := rec.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Value != token || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookies set: %+v, want one HttpOnly, SameSite=Strict cookie with the token", cookies)
	}
	if rec := get("/api/fleet", func(r *http.Request) { r.AddCookie(cookies[0]) }); rec.Code != http.StatusOK {
		t.Errorf("with the cookie: %d, want 200", rec.Code)
	}
	if rec := get("/api/fleet", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }); rec.Code != http.StatusOK {
		t.Errorf("with the bearer token: %d, want 200", rec.Code)
	}
}
