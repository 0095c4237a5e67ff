package kube

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/testenv"
)

// testRestrictedPods: the pods pass the restricted Pod Security Standard,
// as the API server's own admission enforces it.
func testRestrictedPods(t *testing.T, env *testenv.Env, ref runtime.ControlPlaneRef) {
	c := env.Client
	ns := &corev1.Namespace{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: ref.Namespace}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if err := c.Update(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ref.Namespace}}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: DefaultPriorityClassName}, Value: 100000000}
	for _, obj := range []client.Object{sa, pc} {
		if err := c.Create(t.Context(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	objs, err := Objects(ref, clusterSpecs(ref, 3, 2), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	pods := 0
	for _, obj := range objs {
		var template corev1.PodTemplateSpec
		switch w := obj.(type) {
		case *appsv1.Deployment:
			template = w.Spec.Template
		case *appsv1.StatefulSet:
			template = w.Spec.Template
			// The StatefulSet controller adds the claim's volume.
			template.Spec.Volumes = append(template.Spec.Volumes, corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-" + w.Name + "-0"},
			}})
		default:
			continue
		}
		pod := &corev1.Pod{ObjectMeta: template.ObjectMeta, Spec: template.Spec}
		pod.Name, pod.Namespace = obj.GetName()+"-restricted", ref.Namespace
		if err := c.Create(t.Context(), pod); err != nil {
			t.Errorf("a pod of %s is refused: %v", obj.GetName(), err)
		}
		pods++
	}
	if pods != 4 {
		t.Errorf("checked %d workloads' pods, want 4", pods)
	}
}
