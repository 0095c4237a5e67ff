package entrypoint

import (
	"context"
	"slices"
	"strings"
	"testing"

	"hypershift.dev/internal/components"
)

// TestComponentDispatchesFromTheRegistry: `hypershift component NAME ARGS`
// runs NAME's Main from the one table main passes in, with ARGS untouched.
func TestComponentDispatchesFromTheRegistry(t *testing.T) {
	var got []string
	registry := components.Registry{
		{Name: "etcd", Main: func(_ context.Context, args []string) error {
			got = args
			return nil
		}},
		{Name: "kube-apiserver-proxy", Own: true, Main: func(context.Context, []string) error { return nil }},
	}
	if _, err := runWith(t, registry, "component", "etcd", "--name=etcd-0", "--version"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"--name=etcd-0", "--version"}) {
		t.Errorf("etcd ran with %q", got)
	}
	_, err := runWith(t, registry, "component", "kube-scheduler")
	if err == nil || !strings.Contains(err.Error(), `unknown component "kube-scheduler": this binary runs etcd, kube-apiserver-proxy`) {
		t.Errorf("unknown component: %v", err)
	}
	out, err := runWith(t, registry, "component", "--help")
	if err != nil || !strings.Contains(out, "one of hypershift's own (kube-apiserver-proxy)") {
		t.Errorf("component --help (%v) does not list the own components:\n%s", err, out)
	}
	dup := append(registry, components.Registration{Name: "etcd", Main: registry[0].Main})
	if _, err := runWith(t, dup, "component", "etcd"); err == nil || !strings.Contains(err.Error(), "etcd is registered twice") {
		t.Errorf("a registry with etcd twice ran (err %v)", err)
	}
}
