package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"hypershift.dev/internal/components"
)

// TestWatchCacheKeptForWhatNodesUse: a hosted API server keeps a watch
// cache for exactly the resources nodes use (components.WatchCached), as
// its own apiserver_watch_cache_resource_version series show, and a
// controller's watch of an uncached resource still sees its changes: the
// controller manager makes CoreDNS's ReplicaSet from its Deployment.
func TestWatchCacheKeptForWhatNodesUse(t *testing.T) {
	hs := upCLI(t)
	hs.must("create", "cluster", "none", "--name", "w", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("w")

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(mustKubectl(t, kc, "get", "--raw", "/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	var cached []string
	for _, m := range families["apiserver_watch_cache_resource_version"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		name := labels["resource"]
		if labels["group"] != "" {
			name += "." + labels["group"]
		}
		cached = append(cached, name)
	}
	want := slices.Clone(components.WatchCached)
	slices.Sort(cached)
	slices.Sort(want)
	if !slices.Equal(cached, want) {
		t.Errorf("watch caches of the hosted API server:\n got %v\nwant %v", cached, want)
	}

	eventually(t, time.Minute, "the CoreDNS ReplicaSet", func() error {
		out, err := kubectl(t, kc, "-n", "kube-system", "get", "replicasets", "-l", "k8s-app=kube-dns", "-o", "name")
		if err != nil || strings.TrimSpace(out) == "" {
			return errorf("no ReplicaSet of the coredns Deployment: %q %v", out, err)
		}
		return nil
	})
}
