package addons

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// deleteRecheck is how soon a pass looks again while objects it deleted
// are still going (finalizers, a terminating namespace).
const deleteRecheck = time.Second

// setObjects are a revision's objects by phase with their kinds.
type setObject struct {
	key objectKey
	gvk schema.GroupVersionKind
}

// objectsOf lists set's objects phase by phase, placed as rollout places
// them. A hosted-cluster phase is left out when hosted is nil.
func objectsOf(set *hypershiftv1alpha1.ObjectSet, mgmt, hosted client.Client) ([][]setObject, error) {
	out := make([][]setObject, len(set.Spec.Phases))
	for i, p := range set.Spec.Phases {
		if !routed(p.Class) {
			continue // never applied
		}
		isHosted := p.Class == hypershiftv1alpha1.HostedClusterPhaseClass
		c := mgmt
		if isHosted {
			if hosted == nil {
				continue
			}
			c = hosted
		}
		for j := range p.Objects {
			u := p.Objects[j].Object.DeepCopy()
			key, h := placeObject(c, set, p.Name, isHosted, u)
			if h != nil && h.Reason != string(hypershiftv1alpha1.AddonUnsupportedReason) {
				return nil, errors.New(h.Message)
			}
			if h != nil {
				continue // never applied
			}
			out[i] = append(out[i], setObject{key: key, gvk: u.GroupVersionKind()})
		}
	}
	return out, nil
}

// deletePhases deletes objs (phases last to first) that owner owns, one
// phase at a time: an earlier phase is deleted only when the later ones
// are gone. It returns what it waits for, or "" when all are gone.
func deletePhases(ctx context.Context, t targets, objs [][]setObject, owner Owner) (string, error) {
	for i := len(objs) - 1; i >= 0; i-- {
		var pending []string
		for _, o := range objs[i] {
			c := t.mgmt
			if o.key.Hosted {
				c = t.hosted
			}
			there, err := deleteOwned(ctx, c, o.gvk, o.key.Namespace, o.key.Name, owner)
			if apierrors.IsForbidden(err) && o.key.Hosted && o.key.Namespace != "" && t.namespaceGone != nil && t.namespaceGone(ctx, o.key.Namespace) {
				// The connector's Role went with its terminating
				// namespace, and so does the object.
				there, err = false, nil
			}
			if apierrors.IsForbidden(err) && !o.key.Hosted && t.mgmtTerminating {
				// The ServiceAccount's grant may have gone first; the
				// namespace controller deletes the object.
				there, err = false, nil
			}
			if err != nil {
				return "", err
			}
			if there {
				pending = append(pending, o.key.String())
			}
		}
		if len(pending) > 0 {
			return "deleting " + strings.Join(pending, ", "), nil
		}
	}
	return "", nil
}

// supersede retires the revisions older than newest once newest has been
// Available for successDelaySeconds: what they had and newest lacks is
// deleted, then they are archived, then archived revisions beyond
// revisionHistoryLimit are removed. It returns what it waits for.
func (r *Reconciler) supersede(ctx context.Context, s *scope, newest *hypershiftv1alpha1.ObjectSet) (string, error) {
	if d := time.Duration(newest.Spec.SuccessDelaySeconds) * time.Second; d > 0 {
		c := meta.FindStatusCondition(newest.Status.Conditions, string(hypershiftv1alpha1.AddonAvailable))
		if c != nil {
			// No countdown in the message: a status that changes every
			// pass would wake the controller again at once.
			if until := c.LastTransitionTime.Add(d); r.now().Before(until) {
				return fmt.Sprintf("revision %d must stay available until %s (successDelaySeconds %d)", newest.Spec.Revision, until.UTC().Format(time.RFC3339), newest.Spec.SuccessDelaySeconds), nil
			}
		}
	}
	keep := map[objectKey]bool{}
	newObjs, err := objectsOf(newest, s.t.mgmt, s.t.hosted)
	if err != nil {
		return "", err
	}
	for _, phase := range newObjs {
		for _, o := range phase {
			keep[o.key] = true
		}
	}
	for _, old := range s.activeSets() {
		if old == newest {
			continue
		}
		if s.hasHostedPhases([]*hypershiftv1alpha1.ObjectSet{old}) && s.t.hosted == nil {
			return "", fmt.Errorf("revision %d has hosted-cluster objects and the hosted cluster cannot be reached: %w", old.Spec.Revision, s.t.hostedErr)
		}
		objs, err := objectsOf(old, s.t.mgmt, s.t.hosted)
		if err != nil {
			return "", err
		}
		for i := range objs {
			kept := objs[i][:0]
			for _, o := range objs[i] {
				if !keep[o.key] {
					kept = append(kept, o)
				}
			}
			objs[i] = kept
		}
		waiting, err := deletePhases(ctx, s.t, objs, s.owner)
		if err != nil || waiting != "" {
			return waiting, err
		}
		base := old.DeepCopy()
		old.Spec.LifecycleState = hypershiftv1alpha1.ObjectSetArchived
		if err := r.Client.Patch(ctx, old, client.MergeFrom(base)); err != nil {
			return "", fmt.Errorf("archive ObjectSet %s/%s: %w", old.Namespace, old.Name, err)
		}
	}
	return "", r.pruneHistory(ctx, s)
}

// pruneHistory deletes the oldest archived revisions beyond the limit.
func (r *Reconciler) pruneHistory(ctx context.Context, s *scope) error {
	limit := 10
	if l := s.od.Spec.RevisionHistoryLimit; l != nil {
		limit = int(*l)
	}
	var archived []*hypershiftv1alpha1.ObjectSet
	for _, set := range s.sets {
		if set.Spec.LifecycleState == hypershiftv1alpha1.ObjectSetArchived {
			archived = append(archived, set)
		}
	}
	sort.Slice(archived, func(i, j int) bool { return archived[i].Spec.Revision < archived[j].Spec.Revision })
	for len(archived) > limit {
		if err := r.Client.Delete(ctx, archived[0]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete archived ObjectSet %s/%s: %w", archived[0].Namespace, archived[0].Name, err)
		}
		archived = archived[1:]
	}
	return nil
}

// reconcileDelete deletes every object of the active revisions, the newest
// revision's phases last to first and then what only older ones had, on
// both sides; then the connector; then lets the ObjectDeployment go. A
// hosted cluster that is gone (its control plane deleted) has nothing
// left to delete.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.od, Finalizer) {
		return ctrl.Result{}, nil
	}
	hctx, cancel := context.WithTimeout(ctx, hostedTimeout)
	defer cancel()
	sets := s.activeSets()
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.od.Namespace}, ns); err != nil {
		return ctrl.Result{}, fmt.Errorf("namespace of ObjectDeployment %s/%s: %w", s.od.Namespace, s.od.Name, err)
	}
	s.t.mgmtTerminating = ns.DeletionTimestamp != nil
	// A control-plane namespace that is terminating takes the hosted
	// cluster with it (its admin kubeconfig may already be gone): only the
	// management side is cleaned up.
	if s.hasHostedPhases(sets) && ns.DeletionTimestamp == nil {
		r.connectHosted(hctx, s)
		if s.t.hostedErr != nil && !errors.Is(s.t.hostedErr, errNoHostedCluster) {
			return ctrl.Result{}, fmt.Errorf("delete ObjectDeployment %s/%s: %w", s.od.Namespace, s.od.Name, s.t.hostedErr)
		}
	}
	// Newest revision first claims the objects it shares with older ones;
	// deletePhases walks the list from its end, so the newest revision's
	// phases are listed last: they go first, last phase first, then what
	// only older revisions had.
	if s.hostedAdmin != nil {
		// Only the Namespace object is read with the admin credentials.
		s.t.namespaceGone = func(ctx context.Context, ns string) bool {
			got := &corev1.Namespace{}
			err := s.hostedAdmin.Get(ctx, client.ObjectKey{Name: ns}, got)
			return apierrors.IsNotFound(err) || err == nil && got.DeletionTimestamp != nil
		}
	}
	var phases [][]setObject
	seen := map[objectKey]bool{}
	for i := len(sets) - 1; i >= 0; i-- {
		objs, err := objectsOf(sets[i], s.t.mgmt, s.t.hosted)
		if err != nil {
			return ctrl.Result{}, err
		}
		for j, phase := range objs {
			kept := []setObject{}
			for _, o := range phase {
				if !seen[o.key] {
					seen[o.key] = true
					kept = append(kept, o)
				}
			}
			objs[j] = kept
		}
		phases = append(objs, phases...)
	}
	waiting, err := deletePhases(hctx, s.t, phases, s.owner)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting != "" {
		r.Log.V(1).Info("deleting addon objects", "objectdeployment", s.od.Namespace+"/"+s.od.Name, "waiting", waiting)
		return ctrl.Result{RequeueAfter: deleteRecheck}, nil
	}
	if s.hostedAdmin != nil {
		if err := deleteConnector(hctx, s.hostedAdmin, s.od, s.owner); err != nil {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(s.od, Finalizer)
	if err := r.Client.Update(ctx, s.od); err != nil {
		return ctrl.Result{}, fmt.Errorf("remove finalizer of ObjectDeployment %s/%s: %w", s.od.Namespace, s.od.Name, err)
	}
	return ctrl.Result{}, nil
}
