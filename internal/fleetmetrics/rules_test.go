package fleetmetrics

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

type ruleFile struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Record      string            `json:"record"`
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// histograms are the exported histogram families: their _bucket, _sum and
// _count series exist too.
var histograms = []string{
	"hypershift_hosted_apiserver_request_duration_seconds",
	"hypershift_hosted_etcd_request_duration_seconds",
	"hypershift_hosted_etcd_wal_fsync_duration_seconds",
	"hypershift_hostedcluster_create_to_available_seconds", // internal/controller/hostedcluster
}

// The shipped rules are well formed and use only series that exist: each
// one the collector describes (or a histogram's derived series, or a
// recorded rule of the same file). A renamed metric fails here, not
// silently in someone's Prometheus.
func TestShippedRulesUseExportedSeries(t *testing.T) {
	raw, err := os.ReadFile("../../config/prometheus/hypershift-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.UnmarshalStrict(raw, &f); err != nil {
		t.Fatal(err)
	}
	if f.Kind != "PrometheusRule" || len(f.Spec.Groups) == 0 {
		t.Fatalf("kind %q with %d groups, want a PrometheusRule with groups", f.Kind, len(f.Spec.Groups))
	}

	known := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	(&Collector{hosted: NewHostedScraper(nil)}).Describe(ch)
	close(ch)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		known[fqName.FindStringSubmatch(d.String())[1]] = true
	}
	for _, h := range histograms {
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			known[h+suffix] = true
		}
	}
	for _, g := range f.Spec.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = true
			}
		}
	}

	names := regexp.MustCompile(`hypershift[:_][a-zA-Z0-9_:]+`)
	alerts := 0
	for _, g := range f.Spec.Groups {
		for _, r := range g.Rules {
			id := r.Record + r.Alert
			if (r.Record == "") == (r.Alert == "") {
				t.Errorf("group %s: a rule must be a record or an alert: %+v", g.Name, r)
			}
			if strings.TrimSpace(r.Expr) == "" || !balanced(r.Expr) {
				t.Errorf("%s: expression empty or unbalanced: %q", id, r.Expr)
			}
			for _, n := range names.FindAllString(r.Expr, -1) {
				if !known[n] {
					t.Errorf("%s uses %s, which is not exported (known: %v)", id, n, slices.Sorted(maps.Keys(known)))
				}
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", id, r.For, err)
				}
			}
			if r.Alert != "" {
				alerts++
				if !slices.Contains([]string{"warning", "critical"}, r.Labels["severity"]) || r.Annotations["summary"] == "" {
					t.Errorf("alert %s needs a severity (warning|critical) and a summary", r.Alert)
				}
			}
		}
	}
	// The SLOs promised: API availability, create → Available, crash
	// loops, certificates, etcd quota.
	for _, want := range []string{"HostedClusterAPIUnavailable", "HostedClusterSlowCreates", "HostedControlPlaneComponentCrashLooping", "HostedClusterCertificateExpiresSoon", "HostedClusterEtcdNearQuota"} {
		if !strings.Contains(string(raw), "alert: "+want+"\n") {
			t.Errorf("no alert %s", want)
		}
	}
	if alerts < 5 {
		t.Errorf("%d alerts", alerts)
	}
}

func balanced(s string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := false
	for _, c := range s {
		switch {
		case c == '"':
			inString = !inString
		case inString:
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case pairs[c] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[c] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && !inString
}
