package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
)

// Kinds of the objects Apply makes, in the order Delete removes them: the
// workloads first, so their pods stop before their Services and files go.
var appliedKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
	{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "Secret"},
}

// claimKind: the StatefulSets' volumes, made by the StatefulSet controller
// from the claim template (which carries the labels). Apply keeps them
// (etcd's data); Delete removes them so their volumes are released.
var claimKind = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}

// Apply implements runtime.Runtime: it renders the control plane's objects
// and server-side applies them, after checking that none that exists
// belongs to another owner, then deletes the objects of the control plane
// that are no longer rendered.
func (r *Runtime) Apply(ctx context.Context, ref runtime.ControlPlaneRef, specs []runtime.Spec) error {
	return r.applyControlPlane(ctx, ref, specs, nil)
}

// applyControlPlane is Apply, with adjust (when not nil) changing each
// rendered object before it is applied (Fence scales the writers to 0).
func (r *Runtime) applyControlPlane(ctx context.Context, ref runtime.ControlPlaneRef, specs []runtime.Spec, adjust func(client.Object)) error {
	specs, err := r.withPinnedNodePorts(ctx, ref, specs)
	if err != nil {
		return err
	}
	objs, err := Objects(ref, specs, r.opts)
	if err != nil {
		return fmt.Errorf("render control plane %s: %w", ref.Namespace, err)
	}
	if adjust != nil {
		for _, obj := range objs {
			adjust(obj)
		}
	}
	workloads, err := groupWorkloads(specs)
	if err != nil {
		return err
	}
	existing, err := r.checkOwnership(ctx, ref, objs)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.applied[ref] = workloads
	r.mu.Unlock()
	rendered := map[string]bool{}
	for _, obj := range objs {
		key := objectKey(obj.GetObjectKind().GroupVersionKind(), obj.GetName())
		if sts, ok := obj.(*appsv1.StatefulSet); ok && existing[key] != "" {
			if err := r.keepClaimTemplates(ctx, sts); err != nil {
				return err
			}
		}
		if err := r.apply(ctx, obj, existing[key]); err != nil {
			return err
		}
		rendered[key] = true
	}
	return r.prune(ctx, ref, rendered)
}

func objectKey(gvk schema.GroupVersionKind, name string) string { return gvk.Kind + "/" + name }

// keepClaimTemplates gives sts the claim templates of the StatefulSet that
// exists: they are immutable, and the volumes were made from them, so a
// later default (the operator's --etcd-storage-class or size) must not make
// every existing control plane's apply fail.
func (r *Runtime) keepClaimTemplates(ctx context.Context, sts *appsv1.StatefulSet) error {
	live := &appsv1.StatefulSet{}
	if err := r.getPastCache(ctx, client.ObjectKeyFromObject(sts), live); err != nil {
		return fmt.Errorf("read StatefulSet %s/%s: %w", sts.Namespace, sts.Name, err)
	}
	for i := range sts.Spec.VolumeClaimTemplates {
		for _, l := range live.Spec.VolumeClaimTemplates {
			if l.Name == sts.Spec.VolumeClaimTemplates[i].Name {
				sts.Spec.VolumeClaimTemplates[i].Spec = l.Spec
			}
		}
	}
	return nil
}

// checkOwnership refuses, before anything is written, when an object to
// apply exists and is not this control plane's with this owner. It returns
// the UIDs of those that exist.
func (r *Runtime) checkOwnership(ctx context.Context, ref runtime.ControlPlaneRef, objs []client.Object) (map[string]types.UID, error) {
	var foreign []string
	existing := map[string]types.UID{}
	for _, obj := range objs {
		gvk := obj.GetObjectKind().GroupVersionKind()
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(gvk)
		err := r.getPastCache(ctx, client.ObjectKeyFromObject(obj), live)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		if !ownedBy(live, ref) {
			foreign = append(foreign, describeOwner(gvk.Kind, live))
		}
		existing[objectKey(gvk, obj.GetName())] = live.UID
	}
	if len(foreign) > 0 {
		return nil, fmt.Errorf("control plane %s/%s (owner %s): %s exist and are not its objects; leaving everything untouched (remove them, or use another namespace): %w",
			ref.Namespace, ref.Name, ref.Owner, strings.Join(foreign, ", "), runtime.ErrNotOwner)
	}
	return existing, nil
}

// getPastCache reads an object from the cache, and one the cache does not
// hold from the API server: it may be a foreign object the cache does not
// select, or one made a moment ago. Objects the cache holds (every one of
// a running control plane) cost no request.
func (r *Runtime) getPastCache(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && r.reader != nil {
		return r.reader.Get(ctx, key, obj)
	}
	return err
}

// apiReader reads from the API server.
func (r *Runtime) apiReader() client.Reader {
	if r.reader != nil {
		return r.reader
	}
	return r.client
}

// ownedBy: obj is one of ref's objects, made for its owner.
func ownedBy(obj metav1.Object, ref runtime.ControlPlaneRef) bool {
	l := obj.GetLabels()
	return l[ManagedByLabel] == ManagedBy && l[ControlPlaneLabel] == ref.Name && l[OwnerUIDLabel] == ref.Owner
}

func describeOwner(kind string, obj metav1.Object) string {
	owner := obj.GetLabels()[OwnerUIDLabel]
	if owner == "" {
		owner = "none"
	}
	return fmt.Sprintf("%s %s (owner-uid label: %s)", kind, obj.GetName(), owner)
}

// apply server-side applies obj, taking over fields others changed. Status
// belongs to controllers and is not declared. An object checked to exist is
// applied with its UID, which the API server refuses to change: one deleted
// and made again by someone else since the check is not written.
func (r *Runtime) apply(ctx context.Context, obj client.Object, uid types.UID) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	if uid != "" {
		u.SetUID(uid)
	}
	if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// toUnstructured is the object as applied: what the renderer declares,
// without status or unset timestamps.
func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	content, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
	delete(content, "status")
	dropNulls(content)
	dropEmptyDefaults(content)
	return &unstructured.Unstructured{Object: content}, nil
}

// dropNulls removes null values (unset timestamps of typed objects), which
// would otherwise be declared as fields this manager owns.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					dropNulls(em)
				}
			}
		}
	}
}

// dropEmptyDefaults removes the empty structs typed workloads carry for
// fields the API server defaults (a rollout strategy, a claim's status), so
// that the golden files show only what is declared.
func dropEmptyDefaults(obj map[string]any) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return
	}
	for _, field := range []string{"strategy", "updateStrategy"} {
		if m, ok := spec[field].(map[string]any); ok && len(m) == 0 {
			delete(spec, field)
		}
	}
	claims, _ := spec["volumeClaimTemplates"].([]any)
	for _, c := range claims {
		if m, ok := c.(map[string]any); ok {
			delete(m, "status")
		}
	}
}

// list returns the objects of a kind in the control plane's namespace
// that match labels.
func list(ctx context.Context, reader client.Reader, ref runtime.ControlPlaneRef, gvk schema.GroupVersionKind, labels client.MatchingLabels) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := reader.List(ctx, list, client.InNamespace(ref.Namespace), labels); err != nil {
		return nil, fmt.Errorf("list %ss of control plane %s: %w", gvk.Kind, ref.Namespace, err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for i := range list.Items {
		list.Items[i].SetGroupVersionKind(gvk)
	}
	return list.Items, nil
}

// ownLabels select a control plane's objects made for its owner.
func ownLabels(ref runtime.ControlPlaneRef) client.MatchingLabels {
	return client.MatchingLabels{ManagedByLabel: ManagedBy, ControlPlaneLabel: ref.Name, OwnerUIDLabel: ref.Owner}
}

// prune deletes the control plane's objects that Apply no longer renders
// (a removed component), found by label and owner UID.
func (r *Runtime) prune(ctx context.Context, ref runtime.ControlPlaneRef, rendered map[string]bool) error {
	for _, gvk := range appliedKinds {
		objs, err := list(ctx, r.client, ref, gvk, ownLabels(ref))
		if err != nil {
			return err
		}
		for i := range objs {
			if rendered[objectKey(gvk, objs[i].Name)] {
				continue
			}
			if err := r.deleteExactly(ctx, &objs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteExactly deletes the object listed, not one made since under its
// name (UID precondition); one already gone is fine.
func (r *Runtime) deleteExactly(ctx context.Context, obj *metav1.PartialObjectMetadata) error {
	uid := obj.GetUID()
	err := r.client.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", obj.Kind, obj.Namespace, obj.Name, err)
	}
	return nil
}

// Delete implements runtime.Runtime: it deletes every object of the
// control plane, its volume claims included, and refuses (ErrNotOwner,
// nothing deleted) when some of them belong to another owner. The
// namespace stays: its owner deletes it.
func (r *Runtime) Delete(ctx context.Context, ref runtime.ControlPlaneRef) error {
	planeLabels := client.MatchingLabels{ManagedByLabel: ManagedBy, ControlPlaneLabel: ref.Name}
	var ours []metav1.PartialObjectMetadata
	var foreign []string
	for _, gvk := range append(append([]schema.GroupVersionKind(nil), appliedKinds...), claimKind) {
		objs, err := list(ctx, r.apiReader(), ref, gvk, planeLabels)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			if obj.Labels[OwnerUIDLabel] != ref.Owner {
				foreign = append(foreign, describeOwner(gvk.Kind, &obj))
				continue
			}
			ours = append(ours, obj)
		}
	}
	if len(foreign) > 0 {
		return fmt.Errorf("control plane %s/%s (owner %s): %s belong to another owner; deleting nothing: %w",
			ref.Namespace, ref.Name, ref.Owner, strings.Join(foreign, ", "), runtime.ErrNotOwner)
	}
	// What reads etcd stops before etcd does, as the process runtime's
	// StopLast has it: an API server whose etcd was gone spent its whole
	// grace period (30 s) at shutdown trying it. The StatefulSets (etcd)
	// and their claims go once the other workloads' pods have ended.
	var last []metav1.PartialObjectMetadata
	for i := range ours {
		if k := ours[i].Kind; k == statefulSetKind || k == claimKind.Kind {
			last = append(last, ours[i])
			continue
		}
		if err := r.deleteExactly(ctx, &ours[i]); err != nil {
			return err
		}
	}
	r.mu.Lock()
	delete(r.applied, ref)
	r.mu.Unlock()
	readers, all, err := r.podsLeft(ctx, ref)
	if err != nil {
		return err
	}
	if len(readers) > 0 {
		return stoppingError(ref, readers)
	}
	for i := range last {
		if err := r.deleteExactly(ctx, &last[i]); err != nil {
			return err
		}
	}
	if len(all) > 0 {
		return stoppingError(ref, all)
	}
	r.mu.Lock()
	delete(r.deleting, ref)
	r.mu.Unlock()
	return nil
}

const statefulSetKind = "StatefulSet"

// ofStatefulSet: the pod is a StatefulSet's (etcd's).
func ofStatefulSet(p *corev1.Pod) bool {
	c := metav1.GetControllerOf(p)
	return c != nil && c.Kind == statefulSetKind
}

// stopWait bounds how long Delete waits for a control plane's pods: past
// the default grace period of 30 s and the API server's drain (preStop),
// with room for a loaded node. A pod that outlives it (its node is gone,
// its kubelet cannot confirm) is left to the namespace's deletion.
const stopWait = time.Minute

// podsLeft lists, once, the control plane's pods that have not ended:
// readers are those not of a StatefulSet (what reads etcd), all every one.
// Both are empty stopWait after the first Delete of ref. The owner deletes
// the namespace next, and the namespace controller, finding pods there,
// waits out their whole grace period before it looks again; once they are
// gone it removes the namespace at once (docs/kube-runtime.md).
func (r *Runtime) podsLeft(ctx context.Context, ref runtime.ControlPlaneRef) (readers, all []string, err error) {
	now := r.now()
	r.mu.Lock()
	// Forget control planes past their wait that were not asked again (a
	// caller that does not wait): the map holds only recent deletions.
	for other, at := range r.deleting {
		if other != ref && now.Sub(at) >= stopWait {
			delete(r.deleting, other)
		}
	}
	first, seen := r.deleting[ref]
	if !seen {
		first = now
		r.deleting[ref] = now
	}
	r.mu.Unlock()
	if now.Sub(first) >= stopWait {
		return nil, nil, nil
	}
	pods := &corev1.PodList{}
	if err := r.apiReader().List(ctx, pods, client.InNamespace(ref.Namespace), ownLabels(ref)); err != nil {
		return nil, nil, fmt.Errorf("list the pods of control plane %s: %w", ref.Namespace, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		all = append(all, p.Name)
		if !ofStatefulSet(p) {
			readers = append(readers, p.Name)
		}
	}
	return readers, all, nil
}

// stoppingError names up to three of the pods left (ErrStopping).
func stoppingError(ref runtime.ControlPlaneRef, left []string) error {
	more := ""
	if len(left) > 3 {
		more = fmt.Sprintf(" and %d more", len(left)-3)
		left = left[:3]
	}
	return fmt.Errorf("control plane %s: pods %s%s: %w", ref.Namespace, strings.Join(left, ", "), more, runtime.ErrStopping)
}
