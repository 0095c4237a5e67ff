package addons

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// ServiceAccountName is the ServiceAccount of an ObjectDeployment's
// namespace whose rights the management-side phases are applied with: the
// operator impersonates it, so an addon can do in the management cluster
// what its namespace granted that account and nothing the operator may do
// besides. Whoever grants it there can only grant what they hold (RBAC's
// escalation check).
const ServiceAccountName = hypershiftv1alpha1.AddonServiceAccountName

// serviceAccountUser is the user name of namespace's ServiceAccountName.
func serviceAccountUser(namespace string) string {
	return "system:serviceaccount:" + namespace + ":" + ServiceAccountName
}

// ImpersonatingClients returns the Reconciler's Management function: a
// client of cfg that acts as the namespace's ServiceAccountName (the API
// server adds the account's groups). opts should carry the manager's
// scheme and REST mapper, so that no client discovers the API again.
func ImpersonatingClients(cfg *rest.Config, opts client.Options) func(namespace string) (client.Client, error) {
	return func(namespace string) (client.Client, error) {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(namespace)}
		cl, err := client.New(c, opts)
		if err != nil {
			return nil, fmt.Errorf("client acting as ServiceAccount %s/%s: %w", namespace, ServiceAccountName, err)
		}
		return cl, nil
	}
}

// managementKinds are the kinds a management-cluster phase may hold: an
// addon's workload beside the control plane, its configuration, identity,
// Service, disruption budget, network policy and the roles of its own
// namespace. Whatever the ServiceAccount was granted, the operator never
// applies another kind there — none of hypershift's own (HostedClusters,
// HostedControlPlanes, ObjectSets), no Pods, nothing cluster-scoped.
var managementKinds = []schema.GroupKind{
	{Kind: "ConfigMap"},
	{Kind: "Secret"},
	{Kind: "ServiceAccount"},
	{Kind: "Service"},
	{Group: "apps", Kind: "Deployment"},
	{Group: "apps", Kind: "StatefulSet"},
	{Group: "batch", Kind: "Job"},
	{Group: "batch", Kind: "CronJob"},
	{Group: "policy", Kind: "PodDisruptionBudget"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"},
}

// managementKind says whether a management-cluster phase may hold gk, and
// when not, which kinds it may.
func managementKind(gk schema.GroupKind) (bool, string) {
	names := make([]string, 0, len(managementKinds))
	for _, k := range managementKinds {
		if k == gk {
			return true, ""
		}
		names = append(names, k.String())
	}
	return false, strings.Join(names, ", ")
}
