package addons

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/scheme"
)

// TestDeletePhasesReverseOrder: the last phase goes first, and an earlier
// phase only once the later ones are gone; objects without the owner's
// label are left alone.
func TestDeletePhasesReverseOrder(t *testing.T) {
	owner := Owner{UID: "u1", Namespace: "clusters-a", Name: "extra"}
	cm := func(name, uid string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters-a", Name: name}}
		if uid != "" {
			c.Labels = map[string]string{OwnerUIDLabel: uid}
		}
		return c
	}
	var deleted []string
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithObjects(cm("one", "u1"), cm("two-a", "u1"), cm("two-b", "u1"), cm("three", "u1"), cm("foreign", "u2"), cm("unowned", "")).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deleted = append(deleted, obj.GetName())
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	o := func(name string) setObject {
		return setObject{key: objectKey{Kind: "ConfigMap", Namespace: "clusters-a", Name: name}, gvk: gvk}
	}
	phases := [][]setObject{{o("one"), o("foreign")}, {o("two-a"), o("two-b"), o("unowned")}, {o("three")}}
	var passes []string
	for range 10 {
		waiting, err := deletePhases(t.Context(), targets{mgmt: c}, phases, owner)
		if err != nil {
			t.Fatal(err)
		}
		if waiting == "" {
			break
		}
		passes = append(passes, fmt.Sprint(deleted))
	}
	want := []string{"three", "two-a", "two-b", "one"}
	if fmt.Sprint(deleted) != fmt.Sprint(want) {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
	// One pass per phase: phase 2 was not started while 3 was there.
	if fmt.Sprint(passes) != "[[three] [three two-a two-b] [three two-a two-b one]]" {
		t.Fatalf("passes %v", passes)
	}
}

func TestPruneHistory(t *testing.T) {
	od := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "extra", UID: "u1"}}
	od.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	var sets []client.Object
	s := &scope{od: od}
	for rev := int64(1); rev <= 5; rev++ {
		set := newObjectSet(od, rev, "h")
		if rev < 5 {
			set.Spec.LifecycleState = hypershiftv1alpha1.ObjectSetArchived
		}
		sets = append(sets, set)
		s.sets = append(s.sets, set)
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(sets...).Build()
	r := &Reconciler{Client: c}
	if err := r.pruneHistory(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	list := &hypershiftv1alpha1.ObjectSetList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, set := range list.Items {
		left = append(left, set.Name)
	}
	// Archived 1-4 with a limit of 2: 3 and 4 stay, and the active 5.
	if fmt.Sprint(left) != "[extra-3 extra-4 extra-5]" {
		t.Fatalf("left %v", left)
	}
}

// TestPaused: a paused ObjectDeployment makes no revision and says so.
func TestPaused(t *testing.T) {
	od := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "extra", UID: "u1"}}
	od.Spec.Paused = true
	od.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{{Name: "one"}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(od).WithStatusSubresource(od).Build()
	r := &Reconciler{Client: c}
	if _, err := r.Reconcile(t.Context(), ctrlRequest(od)); err != nil {
		t.Fatal(err)
	}
	list := &hypershiftv1alpha1.ObjectSetList{}
	if err := c.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("a paused ObjectDeployment made %d ObjectSets", len(list.Items))
	}
	got := &hypershiftv1alpha1.ObjectDeployment{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(od), got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, string(hypershiftv1alpha1.AddonPaused)) {
		t.Fatalf("Paused is not True: %+v", got.Status.Conditions)
	}
}

// TestSelectorMustSelectTemplate: a spec.selector that does not select the
// template's labels makes no revision and says so, naming both fields; one
// that does (or none) rolls out.
func TestSelectorMustSelectTemplate(t *testing.T) {
	od := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "extra", UID: "u1"}}
	od.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"app": "extra"}}
	od.Spec.Template.Metadata.Labels = map[string]string{"app": "other"}
	od.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{{Name: "one"}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(od).WithStatusSubresource(od, &hypershiftv1alpha1.ObjectSet{}).Build()
	r := &Reconciler{Client: c}
	if _, err := r.Reconcile(t.Context(), ctrlRequest(od)); err != nil {
		t.Fatal(err)
	}
	sets := &hypershiftv1alpha1.ObjectSetList{}
	if err := c.List(t.Context(), sets); err != nil {
		t.Fatal(err)
	}
	got := &hypershiftv1alpha1.ObjectDeployment{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(od), got); err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, string(hypershiftv1alpha1.AddonProgressing))
	if len(sets.Items) != 0 || cond == nil || cond.Reason != string(hypershiftv1alpha1.AddonInvalidSelectorReason) ||
		!strings.Contains(cond.Message, "spec.selector") || !strings.Contains(cond.Message, "spec.template.metadata.labels") {
		t.Fatalf("%d ObjectSets, Progressing %+v: want none and InvalidSelector naming both fields", len(sets.Items), cond)
	}

	got.Spec.Template.Metadata.Labels["app"] = "extra"
	if err := c.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), ctrlRequest(od)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(t.Context(), sets); err != nil {
		t.Fatal(err)
	}
	if len(sets.Items) != 1 {
		t.Fatalf("%d ObjectSets once the selector matches, want revision 1", len(sets.Items))
	}
}

func ctrlRequest(o client.Object) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKeyFromObject(o)}
}

// TestSuccessDelay: older revisions are retired only once the newest has
// been Available for successDelaySeconds.
func TestSuccessDelay(t *testing.T) {
	od := &hypershiftv1alpha1.ObjectDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "extra", UID: "u1"}}
	od.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{{Name: "one"}}
	od.Spec.Template.Spec.SuccessDelaySeconds = 60
	old, newest := newObjectSet(od, 1, "a"), newObjectSet(od, 2, "b")
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	newest.Status.Conditions = []metav1.Condition{{Type: string(hypershiftv1alpha1.AddonAvailable), Status: metav1.ConditionTrue, Reason: "Available", LastTransitionTime: metav1.NewTime(since)}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(old, newest).Build()
	now := since.Add(59 * time.Second)
	r := &Reconciler{Client: c, Clock: func() time.Time { return now }}
	s := &scope{od: od, sets: []*hypershiftv1alpha1.ObjectSet{old, newest}, t: targets{mgmt: c}}
	waiting, err := r.supersede(t.Context(), s, newest)
	if err != nil || !strings.Contains(waiting, "must stay available until 2026-01-01T00:01:00Z") {
		t.Fatalf("at 59 s: waiting %q, err %v", waiting, err)
	}
	got := &hypershiftv1alpha1.ObjectSet{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), got); err != nil || got.Spec.LifecycleState != hypershiftv1alpha1.ObjectSetActive {
		t.Fatalf("revision 1 retired before the delay: %v %v", got.Spec.LifecycleState, err)
	}
	now = since.Add(61 * time.Second)
	if waiting, err := r.supersede(t.Context(), s, newest); err != nil || waiting != "" {
		t.Fatalf("at 61 s: waiting %q, err %v", waiting, err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(old), got); err != nil || got.Spec.LifecycleState != hypershiftv1alpha1.ObjectSetArchived {
		t.Fatalf("revision 1 not archived after the delay: %v %v", got.Spec.LifecycleState, err)
	}
}

// TestUnroutedClassHolds: a phase of a class nothing here handles is
// admitted by the API but holds the rollout, naming the class and the
// field, and the phases after it wait; nothing of it is applied.
func TestUnroutedClassHolds(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	set := &hypershiftv1alpha1.ObjectSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "extra-1"}}
	set.Spec.Revision = 1
	cm := func(name string) hypershiftv1alpha1.ObjectSetObject {
		return hypershiftv1alpha1.ObjectSetObject{Object: unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name},
		}}}
	}
	set.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{
		{Name: "elitr", Class: "sed", Objects: []hypershiftv1alpha1.ObjectSetObject{cm("elitr")}},
		{Name: "after", Objects: []hypershiftv1alpha1.ObjectSetObject{cm("after")}},
	}
	res := rollout(t.Context(), targets{mgmt: c}, set, Owner{UID: "u1", Namespace: "ns", Name: "extra"})
	if res.hold == nil || res.hold.Phase != "elitr" || res.hold.Reason != string(hypershiftv1alpha1.AddonUnsupportedReason) ||
		!strings.Contains(res.hold.Message, `class "sed"`) || !strings.Contains(res.hold.Message, "spec.template.spec.phases[].class") {
		t.Fatalf("hold %+v, want phase elitr held as Unsupported naming class sed and the field", res.hold)
	}
	if len(res.phases) != 2 || res.phases[1].State != PhasePending {
		t.Fatalf("phases %+v, want the phase after it pending", res.phases)
	}
	for _, name := range []string{"elitr", "after"} {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: name}, &corev1.ConfigMap{}); err == nil {
			t.Fatalf("ConfigMap %s was applied though its phase is held", name)
		}
	}
	unrouted := set.DeepCopy()
	unrouted.Spec.Phases = unrouted.Spec.Phases[:1]
	objs, err := objectsOf(unrouted, c, nil)
	if err != nil || len(objs[0]) != 0 {
		t.Fatalf("objectsOf = %v, %v: an unrouted phase has no objects to delete", objs, err)
	}
}
