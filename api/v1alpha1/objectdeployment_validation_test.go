package v1alpha1_test

import (
	"os"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/testenv"
)

// packageOperatorExample is Package Operator's documented ObjectDeployment
// with only its apiVersion changed.
func packageOperatorExample(t *testing.T) *hypershiftv1alpha1.ObjectDeployment {
	t.Helper()
	data, err := os.ReadFile("testdata/package-operator-objectdeployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	od := &hypershiftv1alpha1.ObjectDeployment{}
	// Strict: every field of the documented manifest exists in our API.
	if err := yaml.UnmarshalStrict(data, od); err != nil {
		t.Fatalf("the documented ObjectDeployment does not decode into our types: %v", err)
	}
	return od
}

func addonObject(kind, name string) hypershiftv1alpha1.ObjectSetObject {
	return hypershiftv1alpha1.ObjectSetObject{Object: unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": name},
	}}}
}

func validAddon(name string) *hypershiftv1alpha1.ObjectDeployment {
	od := &hypershiftv1alpha1.ObjectDeployment{}
	od.Namespace, od.Name = "default", name
	od.Spec.Template.Spec.Phases = []hypershiftv1alpha1.ObjectSetTemplatePhase{
		{Name: "rbac", Class: hypershiftv1alpha1.HostedClusterPhaseClass, Objects: []hypershiftv1alpha1.ObjectSetObject{addonObject("Namespace", "addon")}},
		{Name: "deploy", Objects: []hypershiftv1alpha1.ObjectSetObject{addonObject("ConfigMap", "c")}},
	}
	return od
}

// TestObjectDeploymentAdmission checks the documented manifest and each
// validation rule of ObjectDeployment against a real API server.
func TestObjectDeploymentAdmission(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client

	t.Run("package operator's documented manifest", func(t *testing.T) {
		od := packageOperatorExample(t)
		// Admitted unchanged, its placeholder class ("sed") included:
		// the controller, not admission, says that class goes nowhere here.
		want := od.Spec.DeepCopy()
		if err := c.Create(t.Context(), od); err != nil {
			t.Fatalf("the documented manifest is refused: %v", err)
		}
		got := &hypershiftv1alpha1.ObjectDeployment{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(od), got); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(got.Spec, *want) {
			t.Fatalf("the API server changed the spec:\n got %+v\nwant %+v", got.Spec, *want)
		}
	})

	cases := []struct {
		name   string
		mutate func(*hypershiftv1alpha1.ObjectDeployment)
		want   string
	}{
		{"valid", func(*hypershiftv1alpha1.ObjectDeployment) {}, ""},
		{"duplicate phase", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases[1].Name = "rbac"
		}, "spec.template.spec.phases[].name must be unique"},
		{"phase name not a label", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases[1].Name = "Deploy_It"
		}, "spec.template.spec.phases[].name must be a DNS label"},
		{"class not a DNS name", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases[0].Class = "Hosted Cluster"
		}, "spec.template.spec.phases[].class must be empty (management cluster), hosted-cluster, or another lower-case DNS name"},
		{"no phases", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases = nil
		}, "spec.template.spec.phases"},
		{"object without name", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases[1].Objects[0] = addonObject("ConfigMap", "")
		}, "metadata.name is required"},
		{"empty probe", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.AvailabilityProbes = []hypershiftv1alpha1.ObjectSetProbe{{
				Probes:   []hypershiftv1alpha1.Probe{{}},
				Selector: hypershiftv1alpha1.ProbeSelector{Kind: hypershiftv1alpha1.PackageProbeKindSpec{Kind: "ConfigMap"}},
			}}
		}, "probes[] must set condition, fieldsEqual or cel"},
		{"condition mapping to an invalid type", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases[1].Objects[0].ConditionMappings = []hypershiftv1alpha1.ConditionMapping{{SourceType: "Available", DestinationType: "not a type"}}
		}, "destinationType"},
		{"unknown collision protection", func(od *hypershiftv1alpha1.ObjectDeployment) {
			od.Spec.Template.Spec.Phases[1].Objects[0].CollisionProtection = "Always"
		}, "collisionProtection"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			od := validAddon("case-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")))
			tc.mutate(od)
			testenv.ExpectError(t, c.Create(t.Context(), od), tc.want)
		})
	}
}
