package addons

import (
	"context"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Phase states in ObjectSet status.
const (
	PhasePending   = "Pending"
	PhaseApplied   = "Applied"
	PhaseAvailable = "Available"
)

// podKinds make pods, which a management plane without nodes never runs.
var podKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "ReplicaSet": true, "Job": true, "Pod": true, "CronJob": true}

// targets are the two sides a revision applies to. hosted is nil when the
// hosted cluster cannot be reached; hostedErr says why.
type targets struct {
	mgmt      client.Client
	hosted    client.Client
	hostedErr error
	// runsPods is false on a management plane without nodes (`up`).
	runsPods bool
	// beforeHostedPhase makes the connector's Roles in namespaces that
	// earlier phases created; may be nil.
	beforeHostedPhase func(ctx context.Context) error
	// namespaceGone says whether a hosted namespace is gone or
	// terminating (deletion only).
	namespaceGone func(ctx context.Context, ns string) bool
	// mgmtTerminating: the ObjectDeployment's own namespace is being
	// deleted, and its objects with it (deletion only).
	mgmtTerminating bool
}

// rolloutResult is what applying a revision found.
type rolloutResult struct {
	phases  []hypershiftv1alpha1.ObjectSetPhaseStatus
	hold    *hypershiftv1alpha1.RolloutHold
	applied []hypershiftv1alpha1.ControlledObjectReference
	// noPods names workloads applied to a management plane that runs no
	// pods (said even when no probe holds on them).
	noPods []string
	// superseding says what retiring older revisions waits for.
	superseding string
	// mapped are the objects' conditions conditionMappings copy into
	// the ObjectSet's status.
	mapped []metav1.Condition
}

// rollout applies set's phases in order: a phase is applied when every
// phase before it is Available, and is Available when every one of its
// objects passes the probes that select it. The first object that does
// not hold the rollout.
func rollout(ctx context.Context, t targets, set *hypershiftv1alpha1.ObjectSet, owner Owner) rolloutResult {
	res := rolloutResult{}
	for _, phase := range set.Spec.Phases {
		st := hypershiftv1alpha1.ObjectSetPhaseStatus{Name: phase.Name, Class: phase.Class, State: PhasePending}
		if res.hold == nil {
			res.hold = rolloutPhase(ctx, t, set, owner, phase, &res)
			st.State = PhaseAvailable
			if res.hold != nil {
				st.State, st.Message = PhaseApplied, res.hold.Message
			}
		} else {
			st.Message = fmt.Sprintf("waits for phase %s", res.hold.Phase)
		}
		res.phases = append(res.phases, st)
	}
	return res
}

// routed: a phase of this class goes somewhere here (this namespace or the
// hosted cluster); the API admits other classes, as Package Operator does.
func routed(class string) bool {
	return class == "" || class == hypershiftv1alpha1.HostedClusterPhaseClass
}

// applyFailed holds the rollout on an object that could not be read or
// applied; on the management side a refusal means the namespace's
// ServiceAccountName lacks the right, which the message says with the fix.
func applyFailed(phase, object, namespace string, hosted bool, err error) *hypershiftv1alpha1.RolloutHold {
	if !hosted && apierrors.IsForbidden(err) {
		return hold(phase, object, hypershiftv1alpha1.AddonApplyFailedReason,
			"%s: management-side objects are applied as ServiceAccount %s/%s, which may not do this: grant it what the addon needs in namespace %s"+
				" (kubectl -n %s create serviceaccount %s; kubectl -n %s create rolebinding %s --clusterrole=edit --serviceaccount=%s:%s; docs/addons.md): %v",
			object, namespace, ServiceAccountName, namespace, namespace, ServiceAccountName, namespace, ServiceAccountName, namespace, ServiceAccountName, err)
	}
	return hold(phase, object, hypershiftv1alpha1.AddonApplyFailedReason, "%v", err)
}

func hold(phase, object string, reason hypershiftv1alpha1.ConditionReason, format string, args ...any) *hypershiftv1alpha1.RolloutHold {
	return &hypershiftv1alpha1.RolloutHold{Phase: phase, Object: object, Reason: string(reason), Message: fmt.Sprintf(format, args...)}
}

// rolloutPhase applies one phase's objects and probes them; the first
// object that is not applied or not Available holds the phase.
func rolloutPhase(ctx context.Context, t targets, set *hypershiftv1alpha1.ObjectSet, owner Owner, phase hypershiftv1alpha1.ObjectSetTemplatePhase, res *rolloutResult) *hypershiftv1alpha1.RolloutHold {
	if len(phase.Slices) > 0 {
		return hold(phase.Name, "", hypershiftv1alpha1.AddonUnsupportedReason,
			"phase %s names ObjectSlices %v, which hypershift does not support: put the objects in spec.template.spec.phases[].objects", phase.Name, phase.Slices)
	}
	if !routed(phase.Class) {
		return hold(phase.Name, "", hypershiftv1alpha1.AddonUnsupportedReason,
			"phase %s has class %q, which nothing here handles: spec.template.spec.phases[].class is hosted-cluster (the hosted cluster) or empty (this namespace)", phase.Name, phase.Class)
	}
	hosted := phase.Class == hypershiftv1alpha1.HostedClusterPhaseClass
	c := t.mgmt
	if hosted {
		if t.hosted == nil {
			return hold(phase.Name, "", hypershiftv1alpha1.AddonHostedClusterReason, "phase %s goes to the hosted cluster, and cannot: %v", phase.Name, t.hostedErr)
		}
		c = t.hosted
		if t.beforeHostedPhase != nil {
			if err := t.beforeHostedPhase(ctx); err != nil {
				return hold(phase.Name, "", hypershiftv1alpha1.AddonHostedClusterReason, "phase %s: the connector's Roles: %v", phase.Name, err)
			}
		}
	}
	var first *hypershiftv1alpha1.RolloutHold
	for i := range phase.Objects {
		o := &phase.Objects[i]
		u := o.Object.DeepCopy()
		key, h := placeObject(c, set, phase.Name, hosted, u)
		if h != nil {
			return h
		}
		existing, err := getObject(ctx, c, u.GroupVersionKind(), u.GetNamespace(), u.GetName())
		if err != nil {
			return applyFailed(phase.Name, key.String(), set.Namespace, hosted, err)
		}
		if why := collisionFor(owner, existing, o, key); why != "" {
			return hold(phase.Name, key.String(), hypershiftv1alpha1.AddonCollisionReason, "%s is not applied: %s", key, why)
		}
		owner.mark(u, set.Spec.Revision)
		if err := applyUnstructured(ctx, c, u); err != nil {
			return applyFailed(phase.Name, key.String(), set.Namespace, hosted, err)
		}
		gvk := u.GroupVersionKind()
		res.applied = append(res.applied, hypershiftv1alpha1.ControlledObjectReference{Kind: gvk.Kind, Group: gvk.Group, Version: gvk.Version, Namespace: u.GetNamespace(), Name: u.GetName()})
		noPods := !hosted && !t.runsPods && podKinds[gvk.Kind]
		if noPods {
			res.noPods = append(res.noPods, key.String())
		}
		if first != nil {
			continue // the rest of the phase is applied; the first failure holds
		}
		got, err := getObject(ctx, c, gvk, u.GetNamespace(), u.GetName())
		if err != nil || got == nil {
			first = hold(phase.Name, key.String(), hypershiftv1alpha1.AddonApplyFailedReason, "read %s after applying it: %v", key, err)
			continue
		}
		res.mapped = append(res.mapped, mapConditions(got, o.ConditionMappings)...)
		if msg := probeObject(set.Spec.AvailabilityProbes, got); msg != "" {
			if noPods {
				first = hold(phase.Name, key.String(), hypershiftv1alpha1.AddonNoPodsReason,
					"%s is applied but cannot become available: this management plane (hypershift up) runs no pods; run the addon on a management cluster with nodes (hypershift install). Probe: %s", key, msg)
				continue
			}
			first = hold(phase.Name, key.String(), hypershiftv1alpha1.AddonProbeFailedReason, "%s is not available: %s", key, msg)
		}
	}
	return first
}

// collisionFor is why owner may not take existing over under o's
// protection, except that a management-side Secret that is not the addon's
// is never adopted: one beside a control plane may be its PKI.
func collisionFor(owner Owner, existing *unstructured.Unstructured, o *hypershiftv1alpha1.ObjectSetObject, key objectKey) string {
	protection := o.CollisionProtection
	if !key.Hosted && key.Group == "" && key.Kind == "Secret" {
		protection = hypershiftv1alpha1.CollisionPrevent
	}
	return owner.collision(existing, protection)
}

// placeObject sets the namespace an object goes to and refuses what a
// management-cluster phase may not touch: an addon in namespace N writes
// only in N of the management cluster, never cluster-wide.
func placeObject(c client.Client, set *hypershiftv1alpha1.ObjectSet, phase string, hosted bool, u *unstructured.Unstructured) (objectKey, *hypershiftv1alpha1.RolloutHold) {
	gvk := u.GroupVersionKind()
	key := objectKey{Hosted: hosted, Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	namespaced, err := c.IsObjectNamespaced(u)
	if err != nil {
		return key, hold(phase, key.String(), hypershiftv1alpha1.AddonApplyFailedReason, "%s: the API server does not serve this kind: %v", key, err)
	}
	switch {
	case !namespaced:
		key.Namespace = ""
		if !hosted {
			return key, hold(phase, key.String(), hypershiftv1alpha1.AddonUnsupportedReason,
				"%s is cluster-scoped: a management-cluster phase applies only into namespace %s; put it in a hosted-cluster phase", key, set.Namespace)
		}
	case hosted && key.Namespace == "":
		key.Namespace = "default"
	case !hosted && key.Namespace == "":
		key.Namespace = set.Namespace
	case !hosted && key.Namespace != set.Namespace:
		return key, hold(phase, key.String(), hypershiftv1alpha1.AddonUnsupportedReason,
			"%s is in namespace %s: a management-cluster phase applies only into the ObjectDeployment's namespace %s", key, key.Namespace, set.Namespace)
	}
	if ok, kinds := managementKind(gvk.GroupKind()); !hosted && !ok {
		return key, hold(phase, key.String(), hypershiftv1alpha1.AddonUnsupportedReason,
			"%s: a management-cluster phase holds only these kinds: %s; put it in a hosted-cluster phase", key, kinds)
	}
	u.SetNamespace(key.Namespace)
	return key, nil
}

// conditionReason is what metav1.Condition admits as a reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// mapConditions copies obj's conditions of each mapping's sourceType under
// its destinationType.
func mapConditions(obj *unstructured.Unstructured, mappings []hypershiftv1alpha1.ConditionMapping) []metav1.Condition {
	if len(mappings) == 0 {
		return nil
	}
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []metav1.Condition
	for _, m := range mappings {
		for _, raw := range conds {
			c, ok := raw.(map[string]any)
			if !ok || c["type"] != m.SourceType {
				continue
			}
			str := func(k string) string { v, _ := c[k].(string); return v }
			reason := str("reason")
			if !conditionReason.MatchString(reason) {
				reason = "Mapped"
			}
			out = append(out, metav1.Condition{
				Type: m.DestinationType, Status: metav1.ConditionStatus(str("status")), Reason: reason,
				Message: fmt.Sprintf("%s of %s %s: %s", m.SourceType, obj.GetKind(), namespacedName(obj.GetNamespace(), obj.GetName()), str("message")),
			})
		}
	}
	return out
}
