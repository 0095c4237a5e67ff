package hostedcontrolplane

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/components"
	"hypershift.dev/internal/pki"
	"hypershift.dev/internal/runtime"
)

// A CA rotation's DropOld restarts etcd and the API servers, which read the
// etcd CA only at start (docs/security.md, "CA rotation"), one at a time,
// etcd first: an instance not yet restarted keeps the dropped CA in its
// spec (components.Config.HeldTrust) until the one before it runs again,
// started after the drop. A highly available control plane keeps etcd's
// quorum and an API server behind its proxy; a single API server restarts
// while etcd runs, so its graceful stop is not held up by requests waiting
// for etcd. The cross-signed chains the etcd leaves keep until the rotation
// is Done let restarted and held instances verify each other meanwhile.

// restartOrder are the components DropOld restarts, in order.
var restartOrder = []string{components.Etcd, components.KubeAPIServer}

// heldTrust names the instances to hold: in restartOrder, by name, every
// instance not restarted since droppedAt but the first. Pure: the
// controller calls it on every pass.
func heldTrust(instances []runtime.InstanceStatus, droppedAt time.Time) map[string]bool {
	var ordered []runtime.InstanceStatus
	for _, c := range restartOrder {
		var ins []runtime.InstanceStatus
		for _, in := range instances {
			if in.Component == c {
				ins = append(ins, in)
			}
		}
		sort.Slice(ins, func(i, j int) bool { return ins[i].Name < ins[j].Name })
		ordered = append(ordered, ins...)
	}
	held := map[string]bool{}
	released := false
	for _, in := range ordered {
		if in.Phase == runtime.Running && !in.StartedAt.Before(droppedAt) {
			continue // restarted with the new bundle
		}
		if released {
			held[in.Name] = true
		}
		released = true
	}
	return held
}

// heldTrustOf is heldTrust for this control plane: nothing unless a
// rotation dropped the etcd CA and is not Done (the dropped CA's Secret
// exists; it was made at the drop).
func (r *Reconciler) heldTrustOf(ctx context.Context, s *scope, certs *pki.ControlPlane) (map[string]bool, error) {
	if _, ok := certs.Dropped[pki.EtcdCAName]; !ok || r.Runtime.Capabilities().RollsComponents {
		return nil, nil
	}
	secret := &corev1.Secret{}
	name := pki.DroppedName(pki.EtcdCAName)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.hcp.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %s/%s: %w", s.hcp.Namespace, name, err)
	}
	return heldTrust(r.Runtime.Status(s.ref), secret.CreationTimestamp.Time), nil
}
