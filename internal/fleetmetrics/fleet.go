// Package fleetmetrics exports a series per hosted cluster, component and
// certificate from the operator's metrics endpoint: what the operator knows
// (the objects' status and PKI Secrets, read from its cache at scrape time)
// and what each hosted API server measures of itself (requests by verb,
// latency, storage size), scraped through the cluster's admin kubeconfig
// and re-labelled by cluster. docs/metrics.md lists every series.
package fleetmetrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/pki"
)

// Labels of every per-cluster series: the HostedCluster's namespace and
// name.
var clusterLabels = []string{"namespace", "cluster"}

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string{}, clusterLabels...), extra...), nil)
}

var (
	clusterInfo = desc("hypershift_hostedcluster_info",
		"A hosted cluster: 1, with its version, platform and availability policy.", "version", "platform", "availability_policy")
	clusterCondition = desc("hypershift_hostedcluster_condition",
		"A hosted cluster's condition: 1 for its current status, 0 for the others.", "condition", "status")
	clusterCreated = desc("hypershift_hostedcluster_created_timestamp_seconds",
		"When the hosted cluster was created (Unix time).")
	clusterNodes = desc("hypershift_hostedcluster_nodes",
		"Nodes of the hosted cluster's NodePools.")
	clusterReadyNodes = desc("hypershift_hostedcluster_nodes_ready",
		"Ready nodes of the hosted cluster's NodePools.")
	componentUp = desc("hypershift_component_up",
		"1 when the component instance's process or container runs (Starting, Running or Unhealthy), else 0.", "component", "instance")
	componentReady = desc("hypershift_component_ready",
		"1 when the component instance runs and passes its readiness probe, else 0.", "component", "instance")
	componentRestarts = desc("hypershift_component_restarts_total",
		"How often the component instance was restarted.", "component", "instance")
	componentStarted = desc("hypershift_component_start_time_seconds",
		"When the component instance's current process or container started (Unix time).", "component", "instance")
	certificateExpiry = desc("hypershift_certificate_expiry_timestamp_seconds",
		"When a certificate of the hosted cluster's PKI expires (Unix time).", "certificate", "ca")
	certificateRenewal = desc("hypershift_certificate_renewal_timestamp_seconds",
		"When a leaf certificate of the hosted cluster's PKI is renewed (Unix time).", "certificate")
)

// Collector is a prometheus.Collector of the fleet's series.
type Collector struct {
	// reader is the operator's client; the collector only reads (its PKI
	// store is read-only).
	reader client.Client
	hosted *HostedScraper
}

// Register makes a Collector reading from reader (the operator's cache) and
// registers it with controller-runtime's registry, which the operator's
// metrics endpoint serves.
func Register(reader client.Client) *Collector {
	c := &Collector{reader: reader, hosted: NewHostedScraper(reader)}
	// A second operator in one process (tests) keeps exporting the first's.
	if err := metrics.Registry.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		panic(err)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		clusterInfo, clusterCondition, clusterCreated, clusterNodes, clusterReadyNodes,
		componentUp, componentReady, componentRestarts, componentStarted,
		certificateExpiry, certificateRenewal,
	} {
		ch <- d
	}
	c.hosted.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list := &hypershiftv1alpha1.HostedClusterList{}
	if err := c.reader.List(ctx, list); err != nil {
		return
	}
	for i := range list.Items {
		hc := &list.Items[i]
		c.collectCluster(ctx, ch, hc)
	}
	c.hosted.collect(ctx, ch, list.Items)
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (c *Collector) collectCluster(ctx context.Context, ch chan<- prometheus.Metric, hc *hypershiftv1alpha1.HostedCluster) {
	ns, name := hc.Namespace, hc.Name
	gauge(ch, clusterInfo, 1, ns, name, hc.Status.Version, string(hc.Spec.Platform.Type), string(hc.Spec.ControllerAvailabilityPolicy))
	gauge(ch, clusterCreated, float64(hc.CreationTimestamp.Unix()), ns, name)
	gauge(ch, clusterNodes, float64(hc.Status.NodeCount), ns, name)
	gauge(ch, clusterReadyNodes, float64(hc.Status.ReadyNodeCount), ns, name)
	for _, cond := range hc.Status.Conditions {
		for _, status := range []string{"True", "False", "Unknown"} {
			gauge(ch, clusterCondition, boolValue(string(cond.Status) == status), ns, name, cond.Type, status)
		}
	}

	cpNamespace := hc.Status.ControlPlaneNamespace
	if cpNamespace == "" {
		return
	}
	hcp := &hypershiftv1alpha1.HostedControlPlane{}
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: cpNamespace, Name: hc.Name}, hcp); err == nil {
		for _, s := range hcp.Status.Components {
			up := s.Phase == hypershiftv1alpha1.ComponentRunning || s.Phase == hypershiftv1alpha1.ComponentStarting || s.Phase == hypershiftv1alpha1.ComponentUnhealthy
			gauge(ch, componentUp, boolValue(up), ns, name, s.Component, s.Name)
			gauge(ch, componentReady, boolValue(s.Phase == hypershiftv1alpha1.ComponentRunning), ns, name, s.Component, s.Name)
			ch <- prometheus.MustNewConstMetric(componentRestarts, prometheus.CounterValue, float64(s.Restarts), ns, name, s.Component, s.Name)
			if s.StartedAt != nil {
				gauge(ch, componentStarted, float64(s.StartedAt.Unix()), ns, name, s.Component, s.Name)
			}
		}
	}
	certs, err := pki.Inspect(pki.SecretStore{Ctx: ctx, Client: c.reader, Namespace: cpNamespace, ReadOnly: true})
	if err != nil {
		return
	}
	for _, cert := range certs {
		gauge(ch, certificateExpiry, float64(cert.NotAfter.Unix()), ns, name, cert.Name, boolLabel(cert.CA))
		if !cert.CA {
			gauge(ch, certificateRenewal, float64(cert.RenewAt.Unix()), ns, name, cert.Name)
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
