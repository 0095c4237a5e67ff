package fleetmetrics

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/pki"
)

var (
	etcdFsync = desc("hypershift_hosted_etcd_wal_fsync_duration_seconds",
		"Latency of the hosted cluster's etcd members' WAL fsyncs (etcd_disk_wal_fsync_duration_seconds).", "member")
	etcdMemberSize = desc("hypershift_hosted_etcd_member_db_size_bytes",
		"Size of an etcd member's database file (etcd_mvcc_db_total_size_in_bytes).", "member")
	etcdQuota = desc("hypershift_hosted_etcd_quota_bytes",
		"The etcd member's backend quota (etcd_server_quota_backend_bytes): writes are refused beyond it.", "member")
)

// etcdScraper reads each etcd member's /metrics on its client URL with the
// cluster's etcd client certificate, verifying the member against the
// cluster's etcd CA.
type etcdScraper struct {
	mu      sync.Mutex
	clients map[string]etcdClient // by cluster UID
}

type etcdClient struct {
	digest [32]byte
	http   *http.Client
}

func newEtcdScraper() *etcdScraper { return &etcdScraper{clients: map[string]etcdClient{}} }

// client is the cluster's etcd HTTP client, made again when its etcd CA or
// client certificate changed (renewal, rotation).
func (e *etcdScraper) client(ctx context.Context, reader client.Client, hc *hypershiftv1alpha1.HostedCluster, cpNamespace string) (*http.Client, error) {
	store := pki.SecretStore{Ctx: ctx, Client: reader, Namespace: cpNamespace, ReadOnly: true}
	ca, ok, err := store.Get(pki.EtcdCAName)
	if err != nil || !ok {
		return nil, fmt.Errorf("etcd CA: %w", errors.Join(err, pki.ErrMissing))
	}
	cert, ok, err := store.Get(pki.EtcdClientName)
	if err != nil || !ok {
		return nil, fmt.Errorf("etcd client certificate: %w", errors.Join(err, pki.ErrMissing))
	}
	digest := sha256.Sum256(append(append(append([]byte{}, ca.CertPEM...), cert.CertPEM...), cert.KeyPEM...))
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clients[string(hc.UID)]; ok && c.digest == digest {
		return c.http, nil
	}
	pair, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM) {
		return nil, errors.New("etcd CA: no certificate")
	}
	httpClient := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		}},
		Timeout: scrapeTimeout,
	}
	if old, ok := e.clients[string(hc.UID)]; ok {
		old.http.CloseIdleConnections()
	}
	e.clients[string(hc.UID)] = etcdClient{digest: digest, http: httpClient}
	return httpClient, nil
}

func (e *etcdScraper) forget(seen map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for uid, c := range e.clients {
		if !seen[uid] {
			c.http.CloseIdleConnections()
			delete(e.clients, uid)
		}
	}
}

// scrape reads every member of the cluster; a member that does not answer
// is left out.
func (e *etcdScraper) scrape(ctx context.Context, reader client.Client, hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane) map[string]map[string]*dto.MetricFamily {
	urls := hcp.Status.EtcdClientURLs
	if len(urls) == 0 {
		return nil
	}
	c, err := e.client(ctx, reader, hc, hcp.Namespace)
	if err != nil {
		return nil
	}
	out := map[string]map[string]*dto.MetricFamily{}
	for i, url := range urls {
		families, err := getMetrics(ctx, c, strings.TrimSuffix(url, "/")+"/metrics")
		if err == nil {
			out["etcd-"+strconv.Itoa(i)] = families
		}
	}
	return out
}

func getMetrics(ctx context.Context, c *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// emitEtcd emits each member's fsync latency, database size and quota.
func emitEtcd(ch chan<- prometheus.Metric, members map[string]map[string]*dto.MetricFamily, ns, name string) {
	for member, families := range members {
		if f := families["etcd_disk_wal_fsync_duration_seconds"]; f != nil {
			emitHistograms(ch, etcdFsync, f, "", ns, name, member)
		}
		for family, d := range map[string]*prometheus.Desc{"etcd_mvcc_db_total_size_in_bytes": etcdMemberSize, "etcd_server_quota_backend_bytes": etcdQuota} {
			if f := families[family]; f != nil && len(f.GetMetric()) > 0 {
				gauge(ch, d, value(f.GetMetric()[0]), ns, name, member)
			}
		}
	}
}
