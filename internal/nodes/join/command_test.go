package join

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
)

func pool(name, cluster string, platform hypershiftv1alpha1.PlatformType) *hypershiftv1alpha1.NodePool {
	return &hypershiftv1alpha1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: name},
		Spec:       hypershiftv1alpha1.NodePoolSpec{ClusterName: cluster, Platform: hypershiftv1alpha1.NodePoolPlatform{Type: platform}},
	}
}

// TestNonePool: a join command is for the pool named, if it is a None pool
// of the cluster, or for the cluster's only None pool.
func TestNonePool(t *testing.T) {
	key := client.ObjectKey{Namespace: "clusters", Name: "a"}
	for _, tc := range []struct {
		name  string
		pools []client.Object
		pool  string
		want  string
		err   string
	}{
		{name: "the only None pool", pools: []client.Object{pool("a", "a", hypershiftv1alpha1.NonePlatform), pool("s", "a", hypershiftv1alpha1.SimulatedPlatform), pool("b", "b", hypershiftv1alpha1.NonePlatform)}, want: "a"},
		{name: "none", pools: []client.Object{pool("s", "a", hypershiftv1alpha1.SimulatedPlatform)}, err: "has no NodePool of platform None"},
		{name: "several", pools: []client.Object{pool("x", "a", hypershiftv1alpha1.NonePlatform), pool("y", "a", hypershiftv1alpha1.NonePlatform)}, err: "several None NodePools (x, y): choose one with --nodepool"},
		{name: "named", pools: []client.Object{pool("x", "a", hypershiftv1alpha1.NonePlatform), pool("y", "a", hypershiftv1alpha1.NonePlatform)}, pool: "y", want: "y"},
		{name: "named, missing", pool: "y", err: "nodepool clusters/y not found"},
		{name: "named, another cluster's", pools: []client.Object{pool("y", "b", hypershiftv1alpha1.NonePlatform)}, pool: "y", err: "belongs to cluster b, not a"},
		{name: "named, simulated", pools: []client.Object{pool("y", "a", hypershiftv1alpha1.SimulatedPlatform)}, pool: "y", err: "has platform Simulated: only None pools take joined hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.pools...).Build()
			np, err := nonePool(t.Context(), c, key, tc.pool)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want it to say %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case np.Name != tc.want:
				t.Errorf("pool %s, want %s", np.Name, tc.want)
			}
		})
	}
}

// TestPoolVersion: a node joins at its pool's version, else (before the
// NodePool controller pinned it) its control plane's.
func TestPoolVersion(t *testing.T) {
	np := pool("a", "a", hypershiftv1alpha1.NonePlatform)
	hc := hypershiftv1alpha1.NewHostedCluster("clusters", "a", hypershiftv1alpha1.NonePlatform, "1.33.1")
	if v := np.JoinVersion(hc); v != "1.33.1" {
		t.Errorf("no status: %s, want the spec's 1.33.1", v)
	}
	hc.Status.Version = "1.33.0"
	if v := np.JoinVersion(hc); v != "1.33.0" {
		t.Errorf("with a status: %s, want the running 1.33.0", v)
	}
	np.Spec.KubernetesVersion = "1.32.4"
	if v := np.JoinVersion(hc); v != "1.32.4" {
		t.Errorf("pinned pool: %s, want the pool's 1.32.4", v)
	}
}

// TestTokenOptionsCheck: a token lives from 1s to MaxTokenTTL.
func TestTokenOptionsCheck(t *testing.T) {
	for ttl, ok := range map[time.Duration]bool{0: false, time.Second: true, MaxTokenTTL: true, MaxTokenTTL + time.Second: false} {
		if err := (TokenOptions{TTL: ttl}).Check(); (err == nil) != ok {
			t.Errorf("TTL %s: %v, want ok %v", ttl, err, ok)
		}
	}
}
