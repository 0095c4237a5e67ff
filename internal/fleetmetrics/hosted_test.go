package fleetmetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const apiserverMetrics = `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",resource="pods",verb="GET"} 3
apiserver_request_total{code="200",resource="configmaps",verb="GET"} 4
apiserver_request_total{code="500",resource="pods",verb="GET"} 1
apiserver_request_total{code="201",resource="pods",verb="POST"} 2
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{resource="pods",verb="GET",le="0.1"} 2
apiserver_request_duration_seconds_bucket{resource="pods",verb="GET",le="1"} 4
apiserver_request_duration_seconds_bucket{resource="pods",verb="GET",le="+Inf"} 4
apiserver_request_duration_seconds_sum{resource="pods",verb="GET"} 1.5
apiserver_request_duration_seconds_count{resource="pods",verb="GET"} 4
apiserver_request_duration_seconds_bucket{resource="configmaps",verb="GET",le="0.1"} 3
apiserver_request_duration_seconds_bucket{resource="configmaps",verb="GET",le="1"} 3
apiserver_request_duration_seconds_bucket{resource="configmaps",verb="GET",le="+Inf"} 3
apiserver_request_duration_seconds_sum{resource="configmaps",verb="GET"} 0.2
apiserver_request_duration_seconds_count{resource="configmaps",verb="GET"} 3
`

// A hosted API server's series are summed over everything but the labels
// kept (verb and code; verb), and labelled by cluster.
func TestHostedSeriesAreSummedByVerb(t *testing.T) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(apiserverMetrics))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan prometheus.Metric, 16)
	emitSums(ch, hostedRequests, families["apiserver_request_total"], []string{"verb", "code"}, "clusters", "a")
	emitHistograms(ch, hostedLatency, families["apiserver_request_duration_seconds"], "verb", "clusters", "a")
	close(ch)
	counters := map[string]float64{}
	var hist *dto.Histogram
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range out.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["cluster"] != "a" || labels["namespace"] != "clusters" {
			t.Errorf("series without the cluster's labels: %v", labels)
		}
		if out.Counter != nil {
			counters[labels["verb"]+" "+labels["code"]] = out.GetCounter().GetValue()
		}
		if out.Histogram != nil {
			hist = out.GetHistogram()
		}
	}
	want := map[string]float64{"GET 200": 7, "GET 500": 1, "POST 201": 2}
	for k, v := range want {
		if counters[k] != v {
			t.Errorf("requests %s = %v, want %v (all: %v)", k, counters[k], v, counters)
		}
	}
	if len(counters) != len(want) {
		t.Errorf("requests %v, want %v", counters, want)
	}
	if hist == nil || hist.GetSampleCount() != 7 || hist.GetSampleSum() != 1.7 {
		t.Fatalf("GET latency histogram %v, want 7 samples summing 1.7", hist)
	}
	for _, b := range hist.GetBucket() {
		if want := map[float64]uint64{0.1: 5, 1: 7}[b.GetUpperBound()]; b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}
