package addons

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// Marks on every object an ObjectDeployment applies. The owner is recorded
// by UID (a label, so owned objects can be listed) and by name (an
// annotation, for the messages); an owner reference cannot span the two
// clusters.
const (
	OwnerUIDLabel      = "addons.hypershift.dev/owner-uid"
	OwnerAnnotation    = "addons.hypershift.dev/owner"
	RevisionAnnotation = "addons.hypershift.dev/revision"
	// FieldManager applies every addon object (server-side apply).
	FieldManager = "hypershift-addons"
	// Finalizer holds an ObjectDeployment until its objects are deleted
	// on both sides.
	Finalizer = "addons.hypershift.dev/objects"
)

// hypershiftLabelPrefix starts the labels of the objects hypershift makes
// for control planes (addons' own are addons.hypershift.dev/).
const hypershiftLabelPrefix = "hypershift.dev/"

// Owner identifies the ObjectDeployment that applies an object.
type Owner struct {
	UID       string
	Namespace string
	Name      string
}

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// mark puts the owner marks and the revision on obj.
func (o Owner) mark(obj *unstructured.Unstructured, revision int64) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[OwnerUIDLabel] = o.UID
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[OwnerAnnotation] = o.String()
	ann[RevisionAnnotation] = fmt.Sprint(revision)
	obj.SetAnnotations(ann)
}

// owns says whether existing carries o's owner label.
func (o Owner) owns(existing *unstructured.Unstructured) bool {
	return existing.GetLabels()[OwnerUIDLabel] == o.UID
}

// collision says why o may not take existing over under protection, or ""
// when it may: its own objects always; an object of no ObjectDeployment
// with IfNoController or None; another ObjectDeployment's only with None;
// never one that carries hypershift's own labels (a control plane's, or
// its runtime's), whatever the protection.
func (o Owner) collision(existing *unstructured.Unstructured, protection hypershiftv1alpha1.CollisionProtection) string {
	if existing == nil || o.owns(existing) {
		return ""
	}
	for k := range existing.GetLabels() {
		if strings.HasPrefix(k, hypershiftLabelPrefix) {
			return fmt.Sprintf("it carries hypershift's own label %s (an object of a control plane or its runtime) and is never taken over", k)
		}
	}
	other := existing.GetLabels()[OwnerUIDLabel]
	if protection == "" {
		protection = hypershiftv1alpha1.CollisionPrevent
	}
	switch {
	case other != "" && protection != hypershiftv1alpha1.CollisionNone:
		return fmt.Sprintf("it belongs to ObjectDeployment %s (UID %s) and is never taken over; remove it from one of the two, or set collisionProtection: None to take it", existing.GetAnnotations()[OwnerAnnotation], other)
	case other == "" && protection == hypershiftv1alpha1.CollisionPrevent:
		return "it exists and no ObjectDeployment owns it; set collisionProtection: IfNoController on the object to adopt it"
	}
	return ""
}
