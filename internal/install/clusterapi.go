package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/clusterapi"
	"hypershift.dev/internal/image"
)

// Names of what install makes for Cluster API's manager (docs/install.md).
const (
	// ClusterAPIName names the manager's Deployment and ServiceAccount in
	// the operator's namespace.
	ClusterAPIName = "cluster-api-manager"
	// clusterAPIRoleName is the ClusterRole the manager is bound to: the
	// aggregation of every ClusterRole labelled clusterAPIAggregationLabel,
	// as upstream's aggregated-manager-role is.
	clusterAPIRoleName = "hypershift-cluster-api-manager"
	// clusterAPICoreRoleName grants Cluster API's own kinds,
	// clusterAPIProvidersRoleName hypershift's provider kinds.
	clusterAPICoreRoleName      = "hypershift-cluster-api-manager-core"
	clusterAPIProvidersRoleName = "hypershift-cluster-api-manager-providers"
	clusterAPILeaderElection    = "cluster-api-manager-leader-election"
	// clusterAPIAggregationLabel is Cluster API's own: a provider grants the
	// core manager access to its kinds with a ClusterRole labelled so.
	clusterAPIAggregationLabel = "cluster.x-k8s.io/aggregate-to-manager"
	clusterAPIHealthPort       = 9440
)

// clusterAPICRDs are the CRDs of o.ClusterAPIDir; none, and no error, when
// that directory does not exist: install then runs no Cluster API.
func clusterAPICRDs(o Options) ([]client.Object, error) {
	if _, err := os.Stat(o.ClusterAPIDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	crds, err := clusterapi.Manager{Dir: o.ClusterAPIDir}.CRDs()
	if err != nil {
		return nil, fmt.Errorf("install Cluster API: %w", err)
	}
	out := make([]client.Object, 0, len(crds))
	for _, crd := range crds {
		out = append(out, crd)
	}
	return out, nil
}

// clusterAPIObjects are Cluster API's manager and what it runs with, in
// the order they are applied, after the operator's (its namespace and
// PriorityClass).
func clusterAPIObjects(o Options) []client.Object {
	ns := o.Namespace
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: ClusterAPIName}}
	// A fresh map each time: install adds its label to the roles' own
	// labels, which must not reach the aggregation's selector.
	aggregated := func() map[string]string { return map[string]string{clusterAPIAggregationLabel: "true"} }
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ClusterAPIName}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: clusterAPIRoleName},
			AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: aggregated()}},
			},
		},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterAPICoreRoleName, Labels: aggregated()}, Rules: clusterAPICoreRules()},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: clusterAPIProvidersRoleName, Labels: aggregated()}, Rules: clusterAPIProviderRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: clusterAPIRoleName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterAPIRoleName},
			Subjects:   subject,
		},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterAPILeaderElection}, Rules: leaderElectionRules()},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterAPILeaderElection},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: clusterAPILeaderElection},
			Subjects:   subject,
		},
		clusterAPIDeployment(o),
	}
}

func clusterAPIDeployment(o Options) *appsv1.Deployment {
	return workload(o, ClusterAPIName, ClusterAPIName, corev1.Container{
		Name:            "manager",
		Image:           o.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		// The image carries the manager as clusterapi.Manager lays it out.
		Command: []string{clusterapi.Manager{Dir: image.ClusterAPIDir}.Path()},
		Args:    clusterapi.PodArgs(o.Namespace, clusterAPIHealthPort),
		Ports:   []corev1.ContainerPort{{Name: "health", ContainerPort: clusterAPIHealthPort, Protocol: corev1.ProtocolTCP}},
		// Its idle RSS is about 66 MiB (docs/performance.md).
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}},
	})
}
