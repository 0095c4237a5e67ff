package dataplane

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

func deployment(replicas, available, updated int32, generation, observed int64) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns", Generation: generation},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status:     appsv1.DeploymentStatus{AvailableReplicas: available, UpdatedReplicas: updated, ObservedGeneration: observed},
	}
}

func daemonSet(desired, ready, updated int32) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "konnectivity-agent", Generation: 1},
		Status: appsv1.DaemonSetStatus{
			DesiredNumberScheduled: desired, NumberReady: ready, UpdatedNumberScheduled: updated, ObservedGeneration: 1,
		},
	}
}

var service = &corev1.Service{
	TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
	ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
}

func TestHealth(t *testing.T) {
	for _, tc := range []struct {
		name        string
		observed    Observed
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantObjects []hypershiftv1alpha1.DataPlaneObjectStatus
	}{
		{
			name:       "all ready",
			observed:   Observed{Objects: []client.Object{service, deployment(2, 2, 2, 1, 1), daemonSet(3, 3, 3)}, ReadyNodes: 3},
			wantStatus: metav1.ConditionTrue, wantReason: hypershiftv1alpha1.AsExpectedReason.String(),
			wantMessage: "All 3 objects",
			wantObjects: []hypershiftv1alpha1.DataPlaneObjectStatus{
				{Kind: "Service", Namespace: "kube-system", Name: "kube-dns", Healthy: true},
				{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "2/2", Healthy: true},
				{Kind: "DaemonSet", Namespace: "kube-system", Name: "konnectivity-agent", Ready: "3/3", Healthy: true},
			},
		},
		{
			name:       "no nodes: pods pending",
			observed:   Observed{Objects: []client.Object{service, deployment(2, 0, 2, 1, 1), daemonSet(0, 0, 0)}},
			wantStatus: metav1.ConditionFalse, wantReason: hypershiftv1alpha1.NoNodesReason.String(),
			wantMessage: "no Ready node",
			wantObjects: []hypershiftv1alpha1.DataPlaneObjectStatus{
				{Kind: "Service", Namespace: "kube-system", Name: "kube-dns", Healthy: true},
				{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "0/2", Message: "0 of 2 replicas available (2 updated)"},
				{Kind: "DaemonSet", Namespace: "kube-system", Name: "konnectivity-agent", Ready: "0/0", Message: "no node to run on"},
			},
		},
		{
			name:       "scaled down by hand, reapplied, not yet available",
			observed:   Observed{Objects: []client.Object{deployment(2, 1, 2, 3, 3)}, ReadyNodes: 2},
			wantStatus: metav1.ConditionFalse, wantReason: hypershiftv1alpha1.DataPlaneNotReadyReason.String(),
			wantMessage: "Deployment kube-system/coredns: 1 of 2 replicas available",
			wantObjects: []hypershiftv1alpha1.DataPlaneObjectStatus{
				{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "1/2", Message: "1 of 2 replicas available (2 updated)"},
			},
		},
		{
			name:       "spec not observed yet",
			observed:   Observed{Objects: []client.Object{deployment(2, 2, 2, 4, 3)}, ReadyNodes: 2},
			wantStatus: metav1.ConditionFalse, wantReason: hypershiftv1alpha1.DataPlaneNotReadyReason.String(),
			wantMessage: "has not seen the latest spec",
			wantObjects: []hypershiftv1alpha1.DataPlaneObjectStatus{
				{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "2/2", Message: "the deployment controller has not seen the latest spec yet"},
			},
		},
		{
			name:       "agent pods not ready",
			observed:   Observed{Objects: []client.Object{daemonSet(3, 2, 3)}, ReadyNodes: 3},
			wantStatus: metav1.ConditionFalse, wantReason: hypershiftv1alpha1.DataPlaneNotReadyReason.String(),
			wantMessage: "DaemonSet kube-system/konnectivity-agent: 2 of 3 pods ready",
			wantObjects: []hypershiftv1alpha1.DataPlaneObjectStatus{
				{Kind: "DaemonSet", Namespace: "kube-system", Name: "konnectivity-agent", Ready: "2/3", Message: "2 of 3 pods ready (3 updated)"},
			},
		},
		{
			name:       "agent not applied yet: said, not counted",
			observed:   Observed{Objects: []client.Object{deployment(2, 2, 2, 1, 1)}, ReadyNodes: 1, NotApplied: "the Konnectivity agent: Secret konnectivity-ca does not exist yet"},
			wantStatus: metav1.ConditionTrue, wantReason: hypershiftv1alpha1.AsExpectedReason.String(),
			wantMessage: "not applied yet: the Konnectivity agent",
			wantObjects: []hypershiftv1alpha1.DataPlaneObjectStatus{
				{Kind: "Deployment", Namespace: "kube-system", Name: "coredns", Ready: "2/2", Healthy: true},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects, cond := Health(tc.observed)
			if cond.Type != hypershiftv1alpha1.DataPlaneAvailable.String() || cond.Status != tc.wantStatus || cond.Reason != tc.wantReason {
				t.Errorf("condition %s=%s reason %s, want %s reason %s (message %q)", cond.Type, cond.Status, cond.Reason, tc.wantStatus, tc.wantReason, cond.Message)
			}
			if !strings.Contains(cond.Message, tc.wantMessage) {
				t.Errorf("message %q does not say %q", cond.Message, tc.wantMessage)
			}
			if len(objects) != len(tc.wantObjects) {
				t.Fatalf("objects %+v, want %+v", objects, tc.wantObjects)
			}
			for i := range objects {
				if objects[i] != tc.wantObjects[i] {
					t.Errorf("object %d: %+v, want %+v", i, objects[i], tc.wantObjects[i])
				}
			}
		})
	}
}
