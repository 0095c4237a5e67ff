package dashboard

import (
	"context"
	"math"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Sample is one point of a cluster's charts.
type Sample struct {
	At time.Time `json:"at"`
	// Restarts is the sum of its components' restarts.
	Restarts int32 `json:"restarts"`
	// LatencyMillis is the mean latency of the hosted API server's
	// non-streaming requests since the sample before (from its own
	// apiserver_request_duration_seconds); nil when unknown (first
	// sample, no requests, or the API server did not answer).
	LatencyMillis *float64 `json:"latencyMillis,omitempty"`
}

// historyWindow is how far back the charts go.
const historyWindow = time.Hour

// history keeps each cluster's samples of the last hour, by UID.
type history struct {
	mu      sync.Mutex
	samples map[string][]Sample
	// last are each cluster's request latency totals at the last sample.
	last map[string]latencyTotals
}

type latencyTotals struct {
	count uint64
	sum   float64
}

func newHistory() *history {
	return &history{samples: map[string][]Sample{}, last: map[string]latencyTotals{}}
}

// of returns a copy of a cluster's samples.
func (h *history) of(uid string) []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Sample(nil), h.samples[uid]...)
}

// add records a sample for uid; totals are the API server's cumulative
// latency totals (ok false when unknown).
func (h *history) add(uid string, s Sample, totals latencyTotals, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ok {
		if prev, seen := h.last[uid]; seen && totals.count > prev.count && totals.sum >= prev.sum {
			ms := (totals.sum - prev.sum) / float64(totals.count-prev.count) * 1000
			s.LatencyMillis = &ms
		}
		h.last[uid] = totals
	}
	samples := append(h.samples[uid], s)
	cut := 0
	for cut < len(samples) && s.At.Sub(samples[cut].At) > historyWindow {
		cut++
	}
	h.samples[uid] = samples[cut:]
}

// forget drops the clusters not in seen.
func (h *history) forget(seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for uid := range h.samples {
		if !seen[uid] {
			delete(h.samples, uid)
			delete(h.last, uid)
		}
	}
}

// requestTotals sums the count and sum of the hosted API server's
// non-streaming request latencies (WATCH and CONNECT last as long as the
// client stays: they are not latency).
func requestTotals(families map[string]*dto.MetricFamily) (latencyTotals, bool) {
	f := families["apiserver_request_duration_seconds"]
	if f == nil {
		return latencyTotals{}, false
	}
	var t latencyTotals
	for _, m := range f.GetMetric() {
		verb := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == "verb" {
				verb = l.GetValue()
			}
		}
		if strings.EqualFold(verb, "WATCH") || strings.EqualFold(verb, "CONNECT") || m.GetHistogram() == nil {
			continue
		}
		t.count += m.GetHistogram().GetSampleCount()
		t.sum += m.GetHistogram().GetSampleSum()
	}
	return t, !math.IsNaN(t.sum)
}

// sample records one point for every cluster: its restarts, and its API
// latency when it is Available and its metrics can be read.
func (s *Server) sample(ctx context.Context) {
	clusters, err := s.clusters(ctx)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	now := time.Now()
	for i := range clusters {
		hc := &clusters[i]
		uid := string(hc.UID)
		seen[uid] = true
		point := Sample{At: now}
		if hcp, err := s.controlPlane(ctx, hc); err == nil && hcp != nil {
			for _, c := range hcp.Status.Components {
				point.Restarts += c.Restarts
			}
		}
		var totals latencyTotals
		ok := false
		if meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) && hc.Status.KubeConfig != nil && s.scraper != nil {
			if families, err := s.scraper.Scrape(ctx, hc); err == nil {
				totals, ok = requestTotals(families)
			}
		}
		s.history.add(uid, point, totals, ok)
	}
	s.history.forget(seen)
	if s.scraper != nil {
		s.scraper.Forget(seen)
	}
	s.notify()
}
