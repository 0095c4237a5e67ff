package lbmirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/guestpass"
	"hypershift.dev/internal/hostedref"
)

// ClusterFinalizer keeps a HostedCluster whose mirrors are in an external
// infrastructure cluster until they are deleted there: they do not go
// with the control-plane namespace.
const ClusterFinalizer = "hypershift.dev/load-balancer-mirrors"

// DefaultGiveUpAfter is how long a deleted cluster waits for an
// infrastructure cluster that answers with errors before its mirrors
// there are left (reported by a MirrorsLeftReason event).
const DefaultGiveUpAfter = 10 * time.Minute

// MirrorsLeftReason is the event of a deleted cluster whose mirrors in the
// infrastructure cluster could not be deleted; it says how to delete them.
const MirrorsLeftReason = "LoadBalancerMirrorsLeft"

// addClusterFinalizer adds ClusterFinalizer to hc, by an update on the
// resource version read (the operator updates HostedClusters' finalizers,
// it does not patch them).
func (r *Reconciler) addClusterFinalizer(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) error {
	if controllerutil.ContainsFinalizer(hc, ClusterFinalizer) {
		return nil
	}
	upd := hc.DeepCopy()
	controllerutil.AddFinalizer(upd, ClusterFinalizer)
	if err := r.Client.Update(ctx, upd); err != nil {
		return fmt.Errorf("add finalizer %s: %w", ClusterFinalizer, err)
	}
	upd.DeepCopyInto(hc)
	return nil
}

// Finalize deletes a deleted cluster's mirrors in its external
// infrastructure cluster (their EndpointSlices go with them: the mirror
// owns them), then takes ClusterFinalizer off. An infrastructure cluster
// that cannot be reached at all (its Secret, and the control-plane
// namespace's copy, gone or refused) or that fails for GiveUpAfter is
// reported, naming what to delete by hand, and the cluster goes.
func (r *Reconciler) Finalize(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
	if !controllerutil.ContainsFinalizer(hc, ClusterFinalizer) {
		return true, nil
	}
	// The infrastructure cluster gets remoteTimeout; the finalizer's
	// removal below does not depend on what it left of it.
	rctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	err := r.deleteRemoteMirrors(rctx, hc)
	if err != nil {
		var unreachable errUnreachable
		giveUp := r.GiveUpAfter
		if giveUp == 0 {
			giveUp = DefaultGiveUpAfter
		}
		why := "the infrastructure cluster answered with errors for " + giveUp.String()
		switch {
		case errors.As(err, &unreachable):
			why = unreachable.Error() // the operator's words about the Secret
		case time.Since(hc.DeletionTimestamp.Time) < giveUp:
			return false, err
		}
		ns := ""
		if kv := hc.Spec.Platform.KubeVirt; kv != nil && kv.Credentials != nil {
			ns = kv.Credentials.InfraNamespace
		}
		r.event(hc, corev1.EventTypeWarning, MirrorsLeftReason, "Finalize",
			"the load-balancer mirrors in the infrastructure cluster were not deleted (%s): delete the Services labelled %s=%s in its namespace %s",
			why, hostedref.OwnerUIDLabel, hc.UID, ns)
	}
	upd := hc.DeepCopy()
	controllerutil.RemoveFinalizer(upd, ClusterFinalizer)
	if uerr := r.Client.Update(ctx, upd); client.IgnoreNotFound(uerr) != nil {
		return false, fmt.Errorf("remove finalizer %s: %w", ClusterFinalizer, uerr)
	}
	return true, err
}

func (r *Reconciler) deleteRemoteMirrors(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) error {
	in, err := r.infraOf(ctx, hc, true)
	if err != nil {
		return err
	}
	defer in.close()
	if !in.remote {
		return nil
	}
	mirrors := &corev1.ServiceList{}
	if err := in.reader.List(ctx, mirrors, client.InNamespace(in.namespace), client.Limit(int64(r.Limits.PageSize)),
		client.MatchingLabels{hostedref.OwnerUIDLabel: string(hc.UID)}, client.HasLabels{GuestUIDLabel}); err != nil {
		return fmt.Errorf("mirrors in %s: %w", in.namespace, err)
	}
	if len(mirrors.Items) == 0 {
		return nil
	}
	errs := []error{fmt.Errorf("waiting for %d mirrors in %s to be deleted", len(mirrors.Items), in.namespace)}
	for i := range mirrors.Items {
		if m := &mirrors.Items[i]; m.DeletionTimestamp == nil {
			// The infrastructure's load balancer may hold it with its
			// cleanup finalizer until the address is released.
			errs = append(errs, guestpass.DeleteOwned(ctx, in.client, m))
		}
	}
	return errors.Join(errs...)
}
