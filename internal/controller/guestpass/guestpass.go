// Package guestpass holds what the operator's controllers that act on a
// hosted cluster's objects in passes share: the connection to the hosted
// cluster (over the operator's shared connections), reads of its objects
// page by page under a byte budget, and deletes of what a controller made
// under the precondition of its UID.
//
// What a hosted cluster holds is its admin's to write, as many and as
// large as they like: a pass reads it in bounded pages, keeps nothing of
// it between passes, and a pass cut short (ErrTruncated) must not take an
// object it did not read for one that is gone.
package guestpass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clustercache"
	"hypershift.dev/internal/hostedref"
)

// ErrTruncated is a read that stopped at a bound: what it read is a part
// of the cluster's objects, so nothing may be deleted for being missing
// from it.
var ErrTruncated = errors.New("truncated")

// Budget is what is left of a pass's bytes.
type Budget struct{ Left int64 }

// ListPages GETs path page by page (limit, continue), each response read
// through what is left of b, and calls each with every page's items. A
// response past the budget stops the read with ErrTruncated.
func ListPages(ctx context.Context, rc rest.Interface, path string, params map[string]string, pageSize int, b *Budget, each func(raw json.RawMessage) error) error {
	cont := ""
	for {
		req := rc.Get().AbsPath(path).Param("limit", strconv.Itoa(pageSize)).SetHeader("Accept", "application/json")
		for k, v := range params {
			req = req.Param(k, v)
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := req.Stream(ctx)
		if err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
		data, err := io.ReadAll(io.LimitReader(body, b.Left+1))
		_ = body.Close()
		if err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
		if int64(len(data)) > b.Left {
			b.Left = 0
			return fmt.Errorf("list %s: %w", path, ErrTruncated)
		}
		b.Left -= int64(len(data))
		var page struct {
			Metadata metav1.ListMeta   `json:"metadata"`
			Items    []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(data, &page); err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
		for _, raw := range page.Items {
			if err := each(raw); err != nil {
				return err
			}
		}
		if cont = page.Metadata.Continue; cont == "" {
			return nil
		}
	}
}

// DeleteOwned deletes obj under the precondition of its UID: an object
// made again under its name meanwhile is not touched. Gone already is
// done.
func DeleteOwned(ctx context.Context, c client.Client, obj client.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", obj.GetName(), err)
	}
	return nil
}

// Guests opens the operator's connection to a hosted cluster.
type Guests interface {
	Guest(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster, hcp *hypershiftv1alpha1.HostedControlPlane) (kubernetes.Interface, error)
	// Forget drops the connection to the HostedCluster at key.
	Forget(key types.NamespacedName)
}

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

// NewGuests registers a controller's part (name) of the connections;
// reader reads the admin kubeconfig Secrets.
func NewGuests(clusters *clustercache.Cache, reader client.Reader, name string) *CachedGuests {
	return &CachedGuests{
		reader: reader,
		ext: clustercache.Register(clusters, clustercache.ExtensionOptions[kubernetes.Interface]{
			Name: name,
			Connect: func(_ context.Context, _ types.NamespacedName, cfg *rest.Config, _ context.Context) (kubernetes.Interface, error) {
				return kubernetes.NewForConfig(cfg)
			},
			Configure: func(cfg *rest.Config) {
				cfg.QPS, cfg.Burst = 20, 40
				cfg.Timeout = 30 * time.Second
				cfg.UserAgent = "hypershift-" + name + "-controller"
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

// FinalizerRemoval is a JSON patch that removes finalizer f where
// finalizers (as a pass read them) hold it, tested there first, so that
// no other finalizer is dropped whatever was written since.
func FinalizerRemoval(finalizers []string, f string) ([]byte, error) {
	i := slices.Index(finalizers, f)
	if i < 0 {
		return nil, fmt.Errorf("no finalizer %s", f)
	}
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	return json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": f},
		{"op": "remove", "path": path},
	})
}
