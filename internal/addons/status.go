package addons

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/lifecycle"
)

// PodsRunnable is False on a management plane without nodes when a
// management-cluster phase has workloads: they are applied, their pods
// never run.
const PodsRunnable hypershiftv1alpha1.ConditionType = "PodsRunnable"

func setCondition(conds *[]metav1.Condition, gen int64, t hypershiftv1alpha1.ConditionType, ok bool, reason hypershiftv1alpha1.ConditionReason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: string(t), Status: status, Reason: string(reason), Message: msg, ObservedGeneration: gen})
}

// rolloutConditions sets Available, Progressing and PodsRunnable from res.
func rolloutConditions(conds *[]metav1.Condition, gen, revision int64, res *rolloutResult) {
	if h := res.hold; h != nil {
		msg := fmt.Sprintf("revision %d is held in phase %s: %s", revision, h.Phase, h.Message)
		setCondition(conds, gen, hypershiftv1alpha1.AddonAvailable, false, hypershiftv1alpha1.ConditionReason(h.Reason), msg)
		setCondition(conds, gen, hypershiftv1alpha1.AddonProgressing, true, hypershiftv1alpha1.AddonRolloutReason, msg)
	} else {
		setCondition(conds, gen, hypershiftv1alpha1.AddonAvailable, true, hypershiftv1alpha1.AddonAvailableReason, fmt.Sprintf("every phase of revision %d is available", revision))
		if res.superseding != "" {
			setCondition(conds, gen, hypershiftv1alpha1.AddonProgressing, true, hypershiftv1alpha1.AddonSupersededReason, res.superseding)
		} else {
			setCondition(conds, gen, hypershiftv1alpha1.AddonProgressing, false, hypershiftv1alpha1.AddonIdleReason, fmt.Sprintf("revision %d is rolled out", revision))
		}
	}
	if len(res.noPods) > 0 {
		setCondition(conds, gen, PodsRunnable, false, hypershiftv1alpha1.AddonNoPodsReason,
			"this management plane (hypershift up) runs no pods: "+strings.Join(res.noPods, ", ")+" are applied but their pods cannot run here; use a management cluster with nodes (hypershift install)")
	} else {
		meta.RemoveStatusCondition(conds, string(PodsRunnable))
	}
}

// updateObjectSetStatus records res on the revision.
func (r *Reconciler) updateObjectSetStatus(ctx context.Context, set *hypershiftv1alpha1.ObjectSet, res rolloutResult) error {
	patch, err := lifecycle.NewStatusPatch(set)
	if err != nil {
		return err
	}
	set.Status.ObservedGeneration = set.Generation
	set.Status.Holding = res.hold
	set.Status.Phases = res.phases
	set.Status.ControllerOf = res.applied
	rolloutConditions(&set.Status.Conditions, set.Generation, set.Spec.Revision, &res)
	for _, c := range res.mapped {
		c.ObservedGeneration = set.Generation
		meta.SetStatusCondition(&set.Status.Conditions, c)
	}
	return patch.Apply(ctx, r.Client)
}

// updateStatus records the newest revision's rollout on the
// ObjectDeployment; res nil: paused.
func (r *Reconciler) updateStatus(ctx context.Context, s *scope, res *rolloutResult) error {
	od := s.od
	patch, err := lifecycle.NewStatusPatch(od)
	if err != nil {
		return err
	}
	gen := od.Generation
	if od.Spec.Paused {
		setCondition(&od.Status.Conditions, gen, hypershiftv1alpha1.AddonPaused, true, hypershiftv1alpha1.AddonPausedReason, "spec.paused is true: nothing is applied or deleted")
	} else {
		setCondition(&od.Status.Conditions, gen, hypershiftv1alpha1.AddonPaused, false, hypershiftv1alpha1.AddonNotPausedReason, "")
	}
	if s.invalidSelector != "" {
		od.Status.Holding = &hypershiftv1alpha1.RolloutHold{Reason: string(hypershiftv1alpha1.AddonInvalidSelectorReason), Message: s.invalidSelector}
		setCondition(&od.Status.Conditions, gen, hypershiftv1alpha1.AddonProgressing, false, hypershiftv1alpha1.AddonInvalidSelectorReason, s.invalidSelector)
		od.Status.ObservedGeneration = gen
	}
	if res != nil && len(s.sets) > 0 {
		newest := s.sets[len(s.sets)-1]
		od.Status.Revision = newest.Spec.Revision
		od.Status.TemplateHash = newest.Annotations[TemplateHashAnnotation]
		od.Status.Holding = res.hold
		rolloutConditions(&od.Status.Conditions, gen, newest.Spec.Revision, res)
		od.Status.ObservedGeneration = gen
	}
	od.Status.ControllerOf = nil
	for _, set := range s.sets {
		od.Status.ControllerOf = append(od.Status.ControllerOf, hypershiftv1alpha1.ControlledObjectReference{
			Kind: "ObjectSet", Group: hypershiftv1alpha1.GroupVersion.Group, Version: hypershiftv1alpha1.GroupVersion.Version, Namespace: set.Namespace, Name: set.Name,
		})
	}
	return patch.Apply(ctx, r.Client)
}
