package hostedcluster

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func TestDecideFence(t *testing.T) {
	annotated := func(v string) *hypershiftv1alpha1.HostedCluster {
		hc := &hypershiftv1alpha1.HostedCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "a"}}
		if v != "-" {
			hc.Annotations = map[string]string{hypershiftv1alpha1.FencedAnnotation: v}
		}
		return hc
	}
	liveFenced := &hypershiftv1alpha1.HostedControlPlane{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{hypershiftv1alpha1.FencedAnnotation: "true"},
	}}
	asleep := &hypershiftv1alpha1.ControlPlaneHibernation{Hibernated: true, Reason: hypershiftv1alpha1.HibernatedReason}
	awake := &hypershiftv1alpha1.ControlPlaneHibernation{}
	for _, tc := range []struct {
		name       string
		hc         *hypershiftv1alpha1.HostedCluster
		live       *hypershiftv1alpha1.HostedControlPlane
		hib        *hypershiftv1alpha1.ControlPlaneHibernation
		want       bool
		refusedHas string
	}{
		{name: "no annotation", hc: annotated("-")},
		{name: "false", hc: annotated("false")},
		{name: "true", hc: annotated("true"), want: true},
		{name: "true, awake", hc: annotated("true"), hib: awake, want: true},
		{name: "bad value named", hc: annotated("yes"), refusedHas: `annotation hypershift.dev/fenced is "yes"`},
		{name: "hibernated cluster not woken", hc: annotated("true"), hib: asleep, refusedHas: "the control plane is hibernated (Hibernated)"},
		{name: "fenced first: hibernation waits", hc: annotated("true"), live: liveFenced, hib: asleep, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, refused := decideFence(tc.hc, tc.live, tc.hib)
			if got != tc.want {
				t.Errorf("fenced %v, want %v", got, tc.want)
			}
			if tc.refusedHas == "" && refused != "" || !strings.Contains(refused, tc.refusedHas) {
				t.Errorf("refused %q, want it to contain %q", refused, tc.refusedHas)
			}
		})
	}
}

func TestApplyFenceHoldsHibernation(t *testing.T) {
	hcp := &hypershiftv1alpha1.HostedControlPlane{Spec: hypershiftv1alpha1.HostedControlPlaneSpec{
		Hibernation: &hypershiftv1alpha1.ControlPlaneHibernation{Hibernated: true, Reason: hypershiftv1alpha1.ScheduledHibernationReason},
	}}
	applyFence(hcp, true)
	if hcp.Annotations[hypershiftv1alpha1.FencedAnnotation] != "true" {
		t.Errorf("annotations %v, want the fence", hcp.Annotations)
	}
	if h := hcp.Spec.Hibernation; h.Hibernated || h.Reason != "" {
		t.Errorf("hibernation %+v, want it held while fenced", h)
	}
	applyFence(hcp, false)
	if _, ok := hcp.Annotations[hypershiftv1alpha1.FencedAnnotation]; ok {
		t.Errorf("annotations %v, want the fence removed", hcp.Annotations)
	}
}
