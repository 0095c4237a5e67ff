package lbmirror

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/hostedref"
)

// CachedGuests reaches hosted clusters over the operator's shared
// connections (internal/clustercache), with the kubeconfig every
// controller uses (hostedref.OperatorKubeconfig).
type CachedGuests struct {
	ext    *clustercache.Extension[kubernetes.Interface]
	reader client.Reader
	// used holds the keys of the clusters asked for, the only ones
	// Forget lets go of: the other controllers' parts are never touched.
	used sync.Map
}

// NewGuests registers the controller's part of the connections; reader
// reads the admin kubeconfig Secrets.
func NewGuests(clusters *clustercache.Cache, reader client.Reader) *CachedGuests {
	return &CachedGuests{
		reader: reader,
		ext: clustercache.Register(clusters, clustercache.ExtensionOptions[kubernetes.Interface]{
			Name: "lbmirror",
			Connect: func(_ context.Context, _ types.NamespacedName, cfg *rest.Config, _ context.Context) (kubernetes.Interface, error) {
				return kubernetes.NewForConfig(cfg)
			},
			Configure: func(cfg *rest.Config) {
				cfg.QPS, cfg.Burst = 20, 40
				cfg.Timeout = 30 * time.Second
				cfg.UserAgent = "hypershift-lbmirror-controller"
			},
		}),
	}
}

// Guest implements Guests.
func (g *CachedGuests) Guest(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane) (kubernetes.Interface, error) {
	admin, _, err := hostedref.AdminKubeconfig(ctx, g.reader, hc)
	if err != nil {
		return nil, err
	}
	kc, err := hostedref.OperatorKubeconfig(admin, hcp)
	if err != nil {
		return nil, err
	}
	key := hostedref.ControlPlaneKey(client.ObjectKeyFromObject(hc))
	g.used.Store(key, true)
	return g.ext.Get(ctx, key, kc)
}

// Forget implements Guests: the controller's part of the connection goes.
func (g *CachedGuests) Forget(key types.NamespacedName) {
	cp := hostedref.ControlPlaneKey(key)
	if _, ok := g.used.LoadAndDelete(cp); ok {
		g.ext.Forget(cp)
	}
}
