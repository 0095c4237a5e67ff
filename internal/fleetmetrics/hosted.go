package fleetmetrics

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
)

var (
	hostedUp = desc("hypershift_hosted_apiserver_scrape_up",
		"1 when the operator could read the hosted API server's own metrics at this scrape, else 0.")
	hostedRequests = desc("hypershift_hosted_apiserver_requests_total",
		"Requests the hosted API server answered, by verb and HTTP code (its apiserver_request_total summed over resources).", "verb", "code")
	hostedLatency = desc("hypershift_hosted_apiserver_request_duration_seconds",
		"The hosted API server's response latency by verb (its apiserver_request_duration_seconds summed over resources).", "verb")
	hostedStorage = desc("hypershift_hosted_etcd_db_size_bytes",
		"Size of the hosted cluster's etcd database as its API server last saw it (apiserver_storage_size_bytes).")
	hostedEtcdLatency = desc("hypershift_hosted_etcd_request_duration_seconds",
		"Latency of the hosted API server's requests to its etcd, by operation (etcd_request_duration_seconds summed over types).", "operation")
)

// scrapeTimeout bounds one hosted API server's answer; scrapeParallel how
// many are asked at once.
// maxMetricsBytes bounds what is read of one answer: a hosted API server's
// /metrics is a few megabytes.
const (
	scrapeTimeout   = 3 * time.Second
	scrapeParallel  = 8
	maxMetricsBytes = 32 << 20
)

// HostedScraper reads each Available hosted cluster's API server metrics
// through its admin kubeconfig, keeping one HTTP client (and its
// connections) per cluster and kubeconfig.
type HostedScraper struct {
	reader client.Client
	etcd   *etcdScraper

	mu      sync.Mutex
	clients map[string]hostedClient // by cluster UID
}

type hostedClient struct {
	digest [32]byte
	host   string
	http   *http.Client
}

// NewHostedScraper returns a scraper that reads admin kubeconfigs with
// reader.
func NewHostedScraper(reader client.Client) *HostedScraper {
	return &HostedScraper{reader: reader, etcd: newEtcdScraper(), clients: map[string]hostedClient{}}
}

func (h *HostedScraper) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{hostedUp, hostedRequests, hostedLatency, hostedStorage, hostedEtcdLatency, etcdFsync, etcdMemberSize, etcdQuota} {
		ch <- d
	}
}

// collect scrapes every Available cluster (in parallel, each bounded) and
// emits what it read, relabelled.
func (h *HostedScraper) collect(ctx context.Context, ch chan<- prometheus.Metric, clusters []hypershiftv1alpha1.HostedCluster) {
	type result struct {
		hc       *hypershiftv1alpha1.HostedCluster
		families map[string]*dto.MetricFamily
		etcd     map[string]map[string]*dto.MetricFamily
		err      error
	}
	results := make([]result, len(clusters))
	sem := make(chan struct{}, scrapeParallel)
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for i := range clusters {
		hc := &clusters[i]
		seen[string(hc.UID)] = true
		results[i].hc = hc
		if !meta.IsStatusConditionTrue(hc.Status.Conditions, hypershiftv1alpha1.Available.String()) || hc.Status.KubeConfig == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i].families, results[i].err = h.Scrape(ctx, hc)
			hcp := &hypershiftv1alpha1.HostedControlPlane{}
			if hc.Status.ControlPlaneNamespace != "" && h.reader.Get(ctx, client.ObjectKey{Namespace: hc.Status.ControlPlaneNamespace, Name: hc.Name}, hcp) == nil {
				results[i].etcd = h.etcd.scrape(ctx, h.reader, hc, hcp)
			}
		}()
	}
	wg.Wait()
	h.Forget(seen)
	h.etcd.forget(seen)
	for _, r := range results {
		ns, name := r.hc.Namespace, r.hc.Name
		emitEtcd(ch, r.etcd, ns, name)
		if r.families == nil {
			gauge(ch, hostedUp, 0, ns, name)
			continue
		}
		gauge(ch, hostedUp, 1, ns, name)
		emitSums(ch, hostedRequests, r.families["apiserver_request_total"], []string{"verb", "code"}, ns, name)
		emitHistograms(ch, hostedLatency, r.families["apiserver_request_duration_seconds"], "verb", ns, name)
		emitHistograms(ch, hostedEtcdLatency, r.families["etcd_request_duration_seconds"], "operation", ns, name)
		if f := r.families["apiserver_storage_size_bytes"]; f != nil {
			size := 0.0
			for _, m := range f.GetMetric() {
				size = math.Max(size, value(m))
			}
			gauge(ch, hostedStorage, size, ns, name)
		}
	}
}

// Forget drops the clients of clusters that are not in seen (by UID).
func (h *HostedScraper) Forget(seen map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for uid := range h.clients {
		if !seen[uid] {
			h.clients[uid].http.CloseIdleConnections()
			delete(h.clients, uid)
		}
	}
}

// Scrape reads the hosted API server's own metrics through the cluster's
// admin kubeconfig, within scrapeTimeout.
func (h *HostedScraper) Scrape(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (map[string]*dto.MetricFamily, error) {
	c, err := h.client(ctx, hc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBytes))
}

// client is the cluster's HTTP client, made again when its admin
// kubeconfig changed (a renewed certificate). The kubeconfig is the
// operator's copy in the control-plane namespace (hostedref.AdminKubeconfig),
// never the tenant's beside the HostedCluster.
func (h *HostedScraper) client(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (hostedClient, error) {
	data, cfg, err := hostedref.AdminKubeconfig(ctx, h.reader, hc)
	if err != nil {
		return hostedClient{}, err
	}
	digest := sha256.Sum256(data)
	h.mu.Lock()
	c, ok := h.clients[string(hc.UID)]
	h.mu.Unlock()
	if ok && c.digest == digest {
		return c, nil
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return hostedClient{}, err
	}
	c = hostedClient{digest: digest, host: cfg.Host, http: httpClient}
	h.mu.Lock()
	if old, ok := h.clients[string(hc.UID)]; ok {
		old.http.CloseIdleConnections()
	}
	h.clients[string(hc.UID)] = c
	h.mu.Unlock()
	return c, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// emitSums sums a counter family over every label but by, and emits one
// counter per combination of by.
func emitSums(ch chan<- prometheus.Metric, d *prometheus.Desc, f *dto.MetricFamily, by []string, ns, name string) {
	if f == nil {
		return
	}
	sums := map[string]float64{}
	keys := map[string][]string{}
	for _, m := range f.GetMetric() {
		vals := make([]string, len(by))
		for i, l := range by {
			vals[i] = label(m, l)
		}
		k := strings.Join(vals, "\x00")
		sums[k] += value(m)
		keys[k] = vals
	}
	for _, k := range slices.Sorted(maps.Keys(sums)) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, sums[k], append([]string{ns, name}, keys[k]...)...)
	}
}

// emitHistograms sums a histogram family's buckets over every label but by
// (the series of one histogram share their bounds; an empty by sums them
// all) and emits them with the labels fixed, then by's value.
func emitHistograms(ch chan<- prometheus.Metric, d *prometheus.Desc, f *dto.MetricFamily, by string, fixed ...string) {
	if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
		return
	}
	type agg struct {
		count   uint64
		sum     float64
		buckets map[float64]uint64
	}
	byValue := map[string]*agg{}
	for _, m := range f.GetMetric() {
		hist := m.GetHistogram()
		if hist == nil {
			continue
		}
		k := label(m, by)
		a := byValue[k]
		if a == nil {
			a = &agg{buckets: map[float64]uint64{}}
			byValue[k] = a
		}
		a.count += hist.GetSampleCount()
		a.sum += hist.GetSampleSum()
		for _, b := range hist.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				a.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byValue)) {
		a := byValue[k]
		labels := append([]string{}, fixed...)
		if by != "" {
			labels = append(labels, k)
		}
		ch <- prometheus.MustNewConstHistogram(d, a.count, a.sum, a.buckets, labels...)
	}
}
