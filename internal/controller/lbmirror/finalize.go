package lbmirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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

// GiveUpAfter is how long a deleted cluster waits for an infrastructure
// cluster that answers with errors before its mirrors there are left
// (reported by a MirrorsLeftReason event).
const GiveUpAfter = 10 * time.Minute

// MirrorsLeftReason is the event of a deleted cluster whose mirrors in the
// infrastructure cluster could not be deleted; it says how to delete them.
const MirrorsLeftReason = "LoadBalancerMirrorsLeft"

// addClusterFinalizer adds ClusterFinalizer to hc, conditional on the
// resource version read.
func (r *Reconciler) addClusterFinalizer(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) error {
	if controllerutil.ContainsFinalizer(hc, ClusterFinalizer) {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": hc.ResourceVersion, "finalizers": append(slices.Clone(hc.Finalizers), ClusterFinalizer),
	}})
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, hc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("add finalizer %s: %w", ClusterFinalizer, err)
	}
	return nil
}

// Finalize deletes a deleted cluster's mirrors in its external
// infrastructure cluster (their EndpointSlices go with them: the mirror
// owns them), then takes ClusterFinalizer off. An infrastructure cluster
// that cannot be reached at all (its Secret gone or unreadable) or that
// fails for GiveUpAfter is reported, naming what to delete by hand, and
// the cluster goes.
func (r *Reconciler) Finalize(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) (bool, error) {
	if !controllerutil.ContainsFinalizer(hc, ClusterFinalizer) {
		return true, nil
	}
	err := r.deleteRemoteMirrors(ctx, hc)
	if err != nil {
		var unreachable errUnreachable
		if !errors.As(err, &unreachable) && time.Since(hc.DeletionTimestamp.Time) < GiveUpAfter {
			return false, err
		}
		ns := ""
		if kv := hc.Spec.Platform.KubeVirt; kv != nil && kv.Credentials != nil {
			ns = kv.Credentials.InfraNamespace
		}
		r.event(hc, corev1.EventTypeWarning, MirrorsLeftReason, "Finalize",
			"the load-balancer mirrors in the infrastructure cluster could not be deleted (%v): delete the Services labelled %s=%s in its namespace %s",
			err, hostedref.OwnerUIDLabel, hc.UID, ns)
	}
	patch, perr := guestpass.FinalizerRemoval(hc.Finalizers, ClusterFinalizer)
	if perr != nil {
		return false, perr
	}
	if perr := r.Client.Patch(ctx, hc, client.RawPatch(types.JSONPatchType, patch)); client.IgnoreNotFound(perr) != nil {
		return false, fmt.Errorf("remove finalizer %s: %w", ClusterFinalizer, perr)
	}
	return true, err
}

// errUnreachable: no connection to the infrastructure cluster can be made.
type errUnreachable struct{ error }

func (e errUnreachable) Unwrap() error { return e.error }

func (r *Reconciler) deleteRemoteMirrors(ctx context.Context, hc *hypershiftv1alpha1.HostedCluster) error {
	in, err := r.infraOf(ctx, hc)
	if err != nil {
		return errUnreachable{err}
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
