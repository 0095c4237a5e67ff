package addons

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// RevisionLabel and TemplateHashAnnotation sit on every ObjectSet.
const (
	DeploymentLabel        = hypershiftv1alpha1.ObjectDeploymentLabel
	TemplateHashAnnotation = "addons.hypershift.dev/template-hash"
)

// TemplateHash identifies a template: a change of anything in it (phases,
// objects, probes, labels) is a new revision.
func TemplateHash(t *hypershiftv1alpha1.ObjectSetTemplate) (string, error) {
	data, err := json.Marshal(t)
	if err != nil {
		return "", fmt.Errorf("hash template: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16], nil
}

// ObjectSetName is revision's ObjectSet of od.
func ObjectSetName(od *hypershiftv1alpha1.ObjectDeployment, revision int64) string {
	return fmt.Sprintf("%s-%d", od.Name, revision)
}

// newObjectSet is revision of od's template, owned (controller) by od.
func newObjectSet(od *hypershiftv1alpha1.ObjectDeployment, revision int64, hash string) *hypershiftv1alpha1.ObjectSet {
	labels := map[string]string{DeploymentLabel: od.Name}
	for k, v := range od.Spec.Template.Metadata.Labels {
		labels[k] = v
	}
	annotations := map[string]string{TemplateHashAnnotation: hash}
	for k, v := range od.Spec.Template.Metadata.Annotations {
		annotations[k] = v
	}
	t := true
	return &hypershiftv1alpha1.ObjectSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: od.Namespace, Name: ObjectSetName(od, revision),
			Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "ObjectDeployment",
				Name: od.Name, UID: od.UID, Controller: &t, BlockOwnerDeletion: &t,
			}},
		},
		Spec: hypershiftv1alpha1.ObjectSetSpec{
			Revision:              revision,
			LifecycleState:        hypershiftv1alpha1.ObjectSetActive,
			ObjectSetTemplateSpec: *od.Spec.Template.Spec.DeepCopy(),
		},
	}
}

// objectKey names an object of a phase across revisions: the cluster
// side, group, kind, namespace and name.
type objectKey struct {
	Hosted          bool
	Group, Kind     string
	Namespace, Name string
}

func (k objectKey) String() string {
	side := "management cluster"
	if k.Hosted {
		side = "hosted cluster"
	}
	gk := k.Kind
	if k.Group != "" {
		gk = k.Group + "/" + k.Kind
	}
	if k.Namespace == "" {
		return fmt.Sprintf("%s %s (%s)", gk, k.Name, side)
	}
	return fmt.Sprintf("%s %s/%s (%s)", gk, k.Namespace, k.Name, side)
}
