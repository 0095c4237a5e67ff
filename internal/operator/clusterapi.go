package operator

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// InstalledClusterAPI is the ClusterAPI starter of the kube runtime: there
// Cluster API's manager is the Deployment `hypershift install` made
// (install.ClusterAPIName in the operator's namespace, key), never a
// process of the operator's, so the starter starts nothing. It says
// whether that Deployment has an available replica (the replicas elect a
// leader: one runs the controllers), and while it has none, why, naming
// the Deployment; the pools of a machine platform wait until it does.
func InstalledClusterAPI(c client.Reader, key client.ObjectKey) func(context.Context) error {
	return func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, key, d); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("no Deployment %s: `hypershift install` installs Cluster API's manager when Cluster API's directory (clusterapi/, make build) is beside the hypershift binary it runs", key)
			}
			return fmt.Errorf("read Deployment %s: %w", key, err)
		}
		if d.Status.AvailableReplicas > 0 {
			return nil
		}
		msg := fmt.Sprintf("Deployment %s has no available replica (%d of %d)", key, d.Status.AvailableReplicas, replicasOf(d))
		for _, cond := range d.Status.Conditions {
			failing := (cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionFalse) ||
				(cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue)
			if failing && cond.Message != "" {
				msg += ": " + cond.Message
			}
		}
		return fmt.Errorf("%s: see `kubectl -n %s describe deployment %s`", msg, key.Namespace, key.Name)
	}
}

func replicasOf(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}
