package e2e

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"hypershift.dev/internal/testenv"
)

// fleetSeries are the per-cluster series the operator exports
// (docs/metrics.md); each must exist for every cluster.
var fleetSeries = []string{
	"hypershift_hostedcluster_info",
	"hypershift_hostedcluster_condition",
	"hypershift_hostedcluster_created_timestamp_seconds",
	"hypershift_hostedcluster_nodes",
	"hypershift_hostedcluster_nodes_ready",
	"hypershift_component_up",
	"hypershift_component_ready",
	"hypershift_component_restarts_total",
	"hypershift_component_start_time_seconds",
	"hypershift_certificate_expiry_timestamp_seconds",
	"hypershift_certificate_renewal_timestamp_seconds",
	"hypershift_hosted_apiserver_scrape_up",
	"hypershift_hosted_apiserver_requests_total",
	"hypershift_hosted_apiserver_request_duration_seconds",
	"hypershift_hosted_etcd_db_size_bytes",
	"hypershift_hosted_etcd_request_duration_seconds",
	"hypershift_hosted_etcd_wal_fsync_duration_seconds",
	"hypershift_hosted_etcd_member_db_size_bytes",
	"hypershift_hosted_etcd_quota_bytes",
}

// TestFleetMetrics scrapes the operator's metrics endpoint with
// Prometheus's text parser: every fleet series is there for two clusters,
// and a killed component's restarts and start time change. A user of the
// HostedCluster's namespace who rewrites its admin kubeconfig Secret with
// an exec plugin gets nothing run: the scrapes, `create join-command` and
// `dump cluster` use the operator's copy in the control-plane namespace.
func TestFleetMetrics(t *testing.T) {
	ownDirAndPorts(t)
	port := testenv.FreePort(t)
	hs := upCLI(t, "--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(port))
	for _, name := range []string{"m1", "m2"} {
		hs.must("create", "cluster", "none", "--name", name, "--wait", "--timeout", "4m")
	}
	instancePID(t, hs.dataDir, "m1", "kube-scheduler") // started, maybe a pass after Available
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	var families map[string]*dto.MetricFamily
	eventually(t, time.Minute, "every fleet series for both clusters", func() error {
		var err error
		if families, err = scrape(url); err != nil {
			return err
		}
		for _, name := range fleetSeries {
			for _, cluster := range []string{"m1", "m2"} {
				if len(seriesOf(families[name], map[string]string{"cluster": cluster})) == 0 {
					return errorf("no %s for cluster %s", name, cluster)
				}
			}
		}
		return nil
	})
	sched := map[string]string{"cluster": "m1", "instance": "kube-scheduler"}
	restarts := value(t, families, "hypershift_component_restarts_total", sched)
	started := value(t, families, "hypershift_component_start_time_seconds", sched)
	if up := value(t, families, "hypershift_component_up", sched); up != 1 {
		t.Errorf("m1's scheduler up = %v before the kill, want 1", up)
	}
	if ok := value(t, families, "hypershift_hosted_apiserver_scrape_up", map[string]string{"cluster": "m1"}); ok != 1 {
		t.Errorf("m1's API server metrics not read: scrape_up %v", ok)
	}
	if err := syscall.Kill(instancePID(t, hs.dataDir, "m1", "kube-scheduler"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "m1's scheduler restart counted and its new start time exported", func() error {
		f, err := scrape(url)
		if err != nil {
			return err
		}
		r := seriesOf(f["hypershift_component_restarts_total"], sched)
		s := seriesOf(f["hypershift_component_start_time_seconds"], sched)
		if len(r) != 1 || len(s) != 1 || r[0].GetCounter().GetValue() <= restarts || s[0].GetGauge().GetValue() <= started {
			return errorf("restarts %v (was %v), start time %v (was %v)", r, restarts, s, started)
		}
		return nil
	})
	// m2 is untouched.
	if r := value(t, families, "hypershift_component_restarts_total", map[string]string{"cluster": "m2", "instance": "kube-scheduler"}); r != 0 {
		t.Errorf("m2's scheduler restarts = %v, want 0", r)
	}

	// An exec plugin planted in the admin kubeconfig beside the
	// HostedCluster is never run. (Not a subtest: hs fails the test that
	// made it.)
	{
		mgmt := filepath.Join(hs.dataDir, "management.kubeconfig")
		marker := filepath.Join(t.TempDir(), "exec-ran")
		planted := []byte(`apiVersion: v1
kind: Config
clusters:
- name: m2
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
contexts:
- name: m2
  context: {cluster: m2, user: m2}
current-context: m2
users:
- name: m2
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      interactiveMode: Never
      command: /bin/sh
      args: [-c, "touch ` + marker + `"]
`)
		plant := `{"data":{"kubeconfig":"` + base64.StdEncoding.EncodeToString(planted) + `"}}`
		// The operator puts its own content back on its next pass over
		// m2, so the Secret is planted again before each scrape.
		for range 3 {
			mustKubectl(t, mgmt, "-n", "clusters", "patch", "secret", "m2-admin-kubeconfig", "-p", plant)
			f, err := scrape(url)
			if err != nil {
				t.Fatal(err)
			}
			if ok := value(t, f, "hypershift_hosted_apiserver_scrape_up", map[string]string{"cluster": "m2"}); ok != 1 {
				t.Errorf("m2's API server metrics not read with the operator's copy: scrape_up %v", ok)
			}
		}
		mustKubectl(t, mgmt, "-n", "clusters", "patch", "secret", "m2-admin-kubeconfig", "-p", plant)
		joinCommandArgs(t, hs.must("create", "join-command", "--name", "m2"))
		hs.must("dump", "cluster", "m2", "-o", filepath.Join(t.TempDir(), "m2.dump"))
		if _, err := os.Stat(marker); err == nil {
			t.Error("the exec command of a kubeconfig a namespace user planted was run")
		}
	}
}

func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url) //nolint:noctx // a test's loopback scrape
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// seriesOf returns the series of f whose labels include want.
func seriesOf(f *dto.MetricFamily, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		labels := labelsOf(m)
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			out = append(out, m)
		}
	}
	return out
}

// labelsOf returns m's labels by name.
func labelsOf(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// value is the one series of name with labels want: a gauge's or a
// counter's value.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	s := seriesOf(families[name], want)
	if len(s) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(s))
	}
	if c := s[0].GetCounter(); c != nil {
		return c.GetValue()
	}
	return s[0].GetGauge().GetValue()
}
