package hostedcluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Metrics exports hosted-cluster figures to Prometheus.
type Metrics struct {
	reader client.Reader

	createToAvailable prometheus.Histogram
	clustersDesc      *prometheus.Desc

	mu       sync.Mutex
	observed map[string]bool
}

// NewMetrics registers the hosted-cluster metrics with controller-runtime's
// registry. reader lists HostedClusters at scrape time.
func NewMetrics(reader client.Reader) *Metrics {
	m := &Metrics{
		reader: reader,
		createToAvailable: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hypershift_hostedcluster_create_to_available_seconds",
			Help:    "Time from a HostedCluster's creation to its first Available=True.",
			Buckets: []float64{1, 2, 3, 5, 8, 13, 21, 34, 60, 120, 300},
		}),
		clustersDesc: prometheus.NewDesc("hypershift_hostedclusters",
			"Number of HostedClusters by condition type and status.", []string{"condition", "status"}, nil),
		observed: map[string]bool{},
	}
	// A second operator in one process (tests) keeps exporting the first's.
	for _, c := range []prometheus.Collector{m.createToAvailable, m} {
		if err := metrics.Registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			panic(err)
		}
	}
	return m
}

func (m *Metrics) observeAvailable(hc *hypershiftv1alpha1.HostedCluster) {
	key := string(hc.UID)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.observed[key] {
		return
	}
	m.observed[key] = true
	m.createToAvailable.Observe(time.Since(hc.CreationTimestamp.Time).Seconds())
}

func (m *Metrics) forget(hc *hypershiftv1alpha1.HostedCluster) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.observed, string(hc.UID))
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.clustersDesc }

// Collect implements prometheus.Collector: it counts HostedClusters by
// condition from the informer cache.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &hypershiftv1alpha1.HostedClusterList{}
	if err := m.reader.List(ctx, list); err != nil {
		return
	}
	counts := map[[2]string]int{}
	for _, hc := range list.Items {
		for _, c := range hc.Status.Conditions {
			counts[[2]string{c.Type, string(c.Status)}]++
		}
	}
	for _, typ := range mirrored {
		for _, status := range []string{"True", "False", "Unknown"} {
			ch <- prometheus.MustNewConstMetric(m.clustersDesc, prometheus.GaugeValue,
				float64(counts[[2]string{typ.String(), status}]), typ.String(), status)
		}
	}
}
