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
// controller's watch of an uncached resource still sees its changes: once
// the controller manager has made CoreDNS's ReplicaSet (its informers have
// listed), a Deployment created afterwards reaches it through the watch
// and gets a ReplicaSet too.
func TestWatchCacheKeptForWhatNodesUse(t *testing.T) {
	ownDirAndPorts(t)
	hs := sharedPlane(t)
	hs.must("create", "cluster", "none", "--name", "w", "--wait", "--timeout", "3m")
	kc := hs.adminKubeconfig("w")

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(mustKubectl(t, kc, "get", "--raw", "/metrics")))
	if err != nil {
		t.Fatal(err)
	}
	var cached []string
	for _, m := range families["apiserver_watch_cache_resource_version"].GetMetric() {
		labels := labelsOf(m)
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

	replicaSet := func(namespace, selector string) func() error {
		return func() error {
			out, err := kubectl(t, kc, "-n", namespace, "get", "replicasets", "-l", selector, "-o", "name")
			if err != nil || strings.TrimSpace(out) == "" {
				return errorf("no ReplicaSet for %s in %s: %q %v", selector, namespace, out, err)
			}
			return nil
		}
	}
	eventually(t, time.Minute, "the CoreDNS ReplicaSet", replicaSet("kube-system", "k8s-app=kube-dns"))
	mustKubectl(t, kc, "create", "deployment", "watched", "--image=registry.example/pause:1")
	eventually(t, time.Minute, "a ReplicaSet of a Deployment created later", replicaSet("default", "app=watched"))
}
