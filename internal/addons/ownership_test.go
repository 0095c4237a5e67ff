package addons

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestCollision(t *testing.T) {
	me := Owner{UID: "u1", Namespace: "clusters-a", Name: "addon"}
	withOwner := func(uid string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if uid != "" {
			u.SetLabels(map[string]string{OwnerUIDLabel: uid})
			u.SetAnnotations(map[string]string{OwnerAnnotation: "clusters-a/other"})
		}
		return u
	}
	cases := []struct {
		name       string
		existing   *unstructured.Unstructured
		protection hypershiftv1alpha1.CollisionProtection
		want       string // "" may apply
	}{
		{"absent", nil, "", ""},
		{"own", withOwner("u1"), "", ""},
		{"unowned, default Prevent", withOwner(""), "", "no ObjectDeployment owns it"},
		{"unowned, Prevent", withOwner(""), hypershiftv1alpha1.CollisionPrevent, "IfNoController"},
		{"unowned, IfNoController adopts", withOwner(""), hypershiftv1alpha1.CollisionIfNoController, ""},
		{"unowned, None adopts", withOwner(""), hypershiftv1alpha1.CollisionNone, ""},
		{"another's, Prevent", withOwner("u2"), "", "belongs to ObjectDeployment clusters-a/other (UID u2)"},
		{"another's, IfNoController", withOwner("u2"), hypershiftv1alpha1.CollisionIfNoController, "never taken over"},
		{"another's, None takes it", withOwner("u2"), hypershiftv1alpha1.CollisionNone, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := me.collision(tc.existing, tc.protection)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("collision says %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTemplateHash(t *testing.T) {
	a := &hypershiftv1alpha1.ObjectSetTemplate{Spec: hypershiftv1alpha1.ObjectSetTemplateSpec{Phases: []hypershiftv1alpha1.ObjectSetTemplatePhase{{Name: "one"}}}}
	b := a.DeepCopy()
	ha, _ := TemplateHash(a)
	hb, _ := TemplateHash(b)
	if ha != hb {
		t.Fatalf("equal templates hash differently: %s %s", ha, hb)
	}
	b.Spec.Phases[0].Class = hypershiftv1alpha1.HostedClusterPhaseClass
	if hc, _ := TemplateHash(b); hc == ha {
		t.Fatal("a changed class keeps the hash: no new revision")
	}
	c := a.DeepCopy()
	c.Metadata.Labels = map[string]string{"x": "y"}
	if hc, _ := TemplateHash(c); hc == ha {
		t.Fatal("changed template labels keep the hash")
	}
}
