package join

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/clusterclient"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/nodes/bootstrap"
)

// MaxTokenTTL is the longest a join command's token may live.
const MaxTokenTTL = bootstrap.MaxTTL

// TokenOptions are how a join command's token is made.
type TokenOptions struct {
	TTL       time.Duration
	SingleUse bool
}

// Check refuses a lifetime outside [1s, MaxTokenTTL].
func (o TokenOptions) Check() error {
	if o.TTL < time.Second {
		return fmt.Errorf("--ttl %s is too short: tokens live at least 1s", o.TTL)
	}
	if o.TTL > bootstrap.MaxTTL {
		return fmt.Errorf("--ttl %s is longer than the %s a join token may live: pass --ttl %s or less, and print a new join command when it expires", o.TTL, bootstrap.MaxTTL, bootstrap.MaxTTL)
	}
	return nil
}

// Command makes a token for a None pool of the cluster key (pool, or its
// only one when empty) and returns the `hypershift join` line that uses
// it, with the pool's Kubernetes version.
func Command(ctx context.Context, c client.Client, key client.ObjectKey, pool string, opts TokenOptions) (string, error) {
	if err := opts.Check(); err != nil {
		return "", err
	}
	np, err := nonePool(ctx, c, key, pool)
	if err != nil {
		return "", err
	}
	hc := &hypershiftv1alpha1.HostedCluster{}
	if err := c.Get(ctx, key, hc); err != nil {
		return "", fmt.Errorf("hosted cluster %s: %w", key, err)
	}
	kc, err := connectKubeconfig(ctx, c, hc)
	if err != nil {
		return "", err
	}
	network, err := bootstrap.NetworkOf(hc.Spec.Networking)
	if err != nil {
		return "", fmt.Errorf("hosted cluster %s: %w", key, err)
	}
	line, err := bootstrap.JoinCommand(ctx, kc, key.String(), network, bootstrap.TokenRequest{Pool: np.Name, Now: time.Now(), TTL: opts.TTL, SingleUse: opts.SingleUse})
	if err != nil {
		return "", err
	}
	if v := np.JoinVersion(hc); v != "" {
		line += " --kubernetes-version " + v
	}
	return line, nil
}

// nonePool finds the NodePool a join command is for.
func nonePool(ctx context.Context, c client.Client, key client.ObjectKey, name string) (*hypershiftv1alpha1.NodePool, error) {
	if name != "" {
		np := &hypershiftv1alpha1.NodePool{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: name}, np); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("nodepool %s/%s not found: list them with `hypershift get nodepools`", key.Namespace, name)
			}
			return nil, err
		}
		if np.Spec.ClusterName != key.Name {
			return nil, fmt.Errorf("nodepool %s/%s belongs to cluster %s, not %s", key.Namespace, name, np.Spec.ClusterName, key.Name)
		}
		if np.Spec.Platform.Type != hypershiftv1alpha1.NonePlatform {
			return nil, fmt.Errorf("nodepool %s/%s has platform %s: only None pools take joined hosts", key.Namespace, name, np.Spec.Platform.Type)
		}
		return np, nil
	}
	list := &hypershiftv1alpha1.NodePoolList{}
	if err := c.List(ctx, list, client.InNamespace(key.Namespace)); err != nil {
		return nil, err
	}
	var found []*hypershiftv1alpha1.NodePool
	var names []string
	for i := range list.Items {
		np := &list.Items[i]
		if np.Spec.ClusterName == key.Name && np.Spec.Platform.Type == hypershiftv1alpha1.NonePlatform {
			found = append(found, np)
			names = append(names, np.Name)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("hosted cluster %s has no NodePool of platform None: create one with `hypershift create nodepool --platform none --cluster-name %s --name NAME`", key, key.Name)
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("hosted cluster %s has several None NodePools (%s): choose one with --nodepool", key, strings.Join(names, ", "))
	}
}

// connectKubeconfig is the admin kubeconfig the join command connects with:
// the operator's copy in the control-plane namespace (hostedref.AdminKubeconfig)
// when the user may read it; else — a user of the HostedCluster's namespace
// alone — the copy beside the HostedCluster, theirs to trust. Either is read
// with kubeconfig.Parse by whoever connects: no exec, no files.
func connectKubeconfig(ctx context.Context, c client.Client, hc *hypershiftv1alpha1.HostedCluster) ([]byte, error) {
	kc, _, err := hostedref.AdminKubeconfig(ctx, c, hc)
	if apierrors.IsForbidden(err) {
		return clusterclient.AdminKubeconfig(ctx, c, client.ObjectKeyFromObject(hc))
	}
	return kc, err
}
