package operator

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/install"
	"hypershift.dev/internal/testenv"
)

// TestInstalledClusterAPI: the kube runtime's ClusterAPI starter starts
// nothing and says whether install's Cluster API Deployment has an
// available replica: missing, it names the Deployment and how install
// makes it; with none available, it says so with the Deployment's own
// reason; with one, it is ready. No pods run on testenv, so the test
// writes the Deployment's status as the deployment controller would.
func TestInstalledClusterAPI(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	key := client.ObjectKey{Namespace: "default", Name: install.ClusterAPIName}
	ready := InstalledClusterAPI(env.Client, key)

	if err := ready(ctx); err == nil || !strings.Contains(err.Error(), "no Deployment default/cluster-api-manager: `hypershift install` installs") {
		t.Errorf("without the Deployment: %v, want an error naming it and install", err)
	}

	labels := map[string]string{"app.kubernetes.io/name": install.ClusterAPIName}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "hypershift.dev/hypershift:test"}}},
			},
		},
	}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	d.Status.Replicas, d.Status.UnavailableReplicas = 2, 2
	d.Status.Conditions = []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse,
		Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability.",
	}}
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	err := ready(ctx)
	for _, want := range []string{"Deployment default/cluster-api-manager has no available replica (0 of 2)", "Deployment does not have minimum availability.", "kubectl -n default describe deployment cluster-api-manager"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("with no replica available: %v, want it to contain %q", err, want)
		}
	}

	// One replica serves: it leads, the other stands by.
	d.Status.AvailableReplicas, d.Status.ReadyReplicas, d.Status.UnavailableReplicas = 1, 1, 1
	d.Status.Conditions[0].Status = corev1.ConditionTrue
	if err := env.Client.Status().Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err != nil {
		t.Errorf("with one replica available: %v, want ready", err)
	}
}
