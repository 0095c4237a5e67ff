package install

import (
	rbacv1 "k8s.io/api/rbac/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	// allVerbs are what the kube runtime does to the objects it owns: it
	// reads them from the manager's cache, server-side applies them
	// (create, patch) and deletes them with a UID precondition.
	allVerbs   = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	eventVerbs = []string{"create", "patch", "update"}
)

// operatorRules is exactly what the operator's clients do in the management
// cluster (docs/install.md lists why each is there). Cached reads are
// cluster-wide informers, hence list and watch everywhere the operator gets.
func operatorRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Finalizers are added and removed by update, status by patch; a
		// HostedCluster's control plane is created or patched and deleted,
		// its NodePools deleted with it.
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostedclusters"}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostedcontrolplanes"}, Verbs: allVerbs},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"nodepools"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
		{
			APIGroups: []string{"hypershift.dev"},
			Resources: []string{"hostedclusters/status", "hostedcontrolplanes/status", "nodepools/status"},
			Verbs:     []string{"update", "patch"},
		},
		// Cluster API's bootstrap provider (docs/machines.md): a JoinConfig
		// gets its status and owns its data Secret (blockOwnerDeletion
		// needs update on its finalizers); the Cluster and Machine it is
		// for are read, uncached.
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"joinconfigs"}, Verbs: readVerbs},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"joinconfigs/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"joinconfigs/finalizers"}, Verbs: []string{"update"}},
		// Pools of a machine platform are Cluster API objects the NodePool
		// controller makes in the control-plane namespace (a Cluster, a
		// MachineDeployment, a MachineHealthCheck and the templates);
		// their Machines are read for the pool's status.
		{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"clusters", "machinedeployments", "machinehealthchecks"}, Verbs: allVerbs},
		{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machines", "machinesets"}, Verbs: readVerbs},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"joinconfigtemplates", "hostmachinetemplates", "hostclusters"}, Verbs: allVerbs},
		// The infrastructure providers of platforms KubeVirt, AWS and Azure
		// (docs/platforms.md): their infrastructure cluster (marked ready:
		// status), machine templates and identities are written; their
		// machines read, for the Nodes' names.
		{
			APIGroups: []string{"infrastructure.cluster.x-k8s.io"},
			Resources: []string{
				"kubevirtclusters", "kubevirtmachinetemplates",
				"awsclusters", "awsmachinetemplates", "awsclusterstaticidentities",
				"azureclusters", "azuremachinetemplates", "azureclusteridentities",
			},
			Verbs: allVerbs,
		},
		{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Resources: []string{"kubevirtclusters/status", "awsclusters/status", "azureclusters/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"infrastructure.cluster.x-k8s.io"}, Resources: []string{"kubevirtmachines", "awsmachines", "azuremachines"}, Verbs: readVerbs},
		// The infrastructure provider for machines of one host: a
		// HostMachine gets a finalizer (update) and status, as a
		// HostCluster does status.
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostmachines"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostmachines/status", "hostclusters/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostmachines/finalizers"}, Verbs: []string{"update"}},
		// The admin kubeconfig Secret beside a HostedCluster is owned by it
		// with blockOwnerDeletion, which needs update on its finalizers.
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostedclusters/finalizers"}, Verbs: []string{"update"}},
		// Control-plane namespaces: created, labelled with the owner UID
		// (patch), deleted with the cluster.
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		// PKI, encryption key and kubeconfig Secrets; the kube runtime's
		// file Secrets.
		{APIGroups: []string{""}, Resources: []string{"secrets", "services"}, Verbs: allVerbs},
		// The load-balancer mirrors of guest Services (a Service each, in
		// the control-plane namespace) get their endpoints written by the
		// operator (internal/controller/lbmirror).
		{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: allVerbs},
		// The kube runtime reports pods and releases volumes with the
		// control plane. The machines of Host NodePools are privileged
		// pods, each with its userdata Secret, in a namespace of the
		// control plane's machines with a service account of its own
		// (internal/runtime/kube).
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: allVerbs},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: allVerbs},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: allVerbs},
		// Condition changes are recorded as events (events.k8s.io, or the
		// core API where that is missing).
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: eventVerbs},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: eventVerbs},
		// Addons (docs/addons.md): ObjectDeployments get a finalizer and
		// status; their ObjectSets are made, archived and pruned. The
		// objects of management-cluster phases are applied as the
		// ServiceAccount hypershift-addons of the ObjectDeployment's
		// namespace, with what that namespace granted it: the operator
		// may impersonate accounts of that name only.
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"impersonate"}, ResourceNames: []string{hypershiftv1alpha1.AddonServiceAccountName}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"objectdeployments"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"objectsets"}, Verbs: allVerbs},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"objectdeployments/status", "objectsets/status"}, Verbs: []string{"update", "patch"}},
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"objectdeployments/finalizers"}, Verbs: []string{"update"}},
		// /metrics answers only a bearer token the management API server
		// authenticates (TokenReview) and authorizes for GET /metrics
		// (SubjectAccessReview): any pod of the cluster reaches the port.
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}
}

// clusterAPICoreRules are what the controllers of Cluster API's manager
// that hypershift runs (Cluster, Machine, MachineSet, MachineDeployment,
// MachineHealthCheck, the ClusterCache; docs/machines.md) do to Cluster
// API's kinds and the core API: the union of their kubebuilder:rbac
// markers, upstream's config/rbac/role.yaml without the rules of the
// controllers left off (ClusterClass, ClusterResourceSet, MachinePool,
// runtime extensions, IPAM, the CRD migrator, secure metrics) and without
// the provider groups (*.cluster.x-k8s.io), which hold no kind here.
func clusterAPICoreRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"clusters", "clusters/status", "clusters/finalizers"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{
			APIGroups: []string{"cluster.x-k8s.io"},
			Resources: []string{
				"machines", "machines/status", "machines/finalizers",
				"machinesets", "machinesets/status", "machinesets/finalizers",
				"machinedeployments", "machinedeployments/status", "machinedeployments/finalizers",
			},
			Verbs: allVerbs,
		},
		{
			APIGroups: []string{"cluster.x-k8s.io"},
			Resources: []string{"machinehealthchecks", "machinehealthchecks/status", "machinehealthchecks/finalizers"},
			Verbs:     []string{"get", "list", "watch", "update", "patch"},
		},
		{APIGroups: []string{"cluster.x-k8s.io"}, Resources: []string{"machinedrainrules"}, Verbs: readVerbs},
		// Which version of the contract a referenced kind follows is read
		// from its CRD's labels.
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: readVerbs},
		// The <cluster>-kubeconfig Secrets (read by the ClusterCache) and
		// bootstrap data Secrets; the Cluster controller writes a
		// kubeconfig only for a Cluster without a control plane reference.
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
		// Its recorder writes core events (not events.k8s.io).
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// clusterAPIProviderRules let Cluster API's manager act on hypershift's
// kinds in its contracts, as upstream grants it the provider groups: the
// HostedControlPlane as control plane, HostCluster, HostMachine and its
// template as infrastructure, JoinConfig and its template as bootstrap. It
// reads and watches them, takes ownership (patch), makes a Machine's
// HostMachine and JoinConfig from their templates (create) and deletes
// what a Machine or Cluster being deleted owns. It
// never creates a HostedControlPlane (the operator does, and the admission
// policy refuses anyone else).
func clusterAPIProviderRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"hypershift.dev"}, Resources: []string{"hostedcontrolplanes"}, Verbs: []string{"get", "list", "watch", "update", "patch", "delete"}},
		{
			APIGroups: []string{"hypershift.dev"},
			Resources: []string{"hostclusters", "hostmachines", "hostmachinetemplates", "joinconfigs", "joinconfigtemplates"},
			Verbs:     allVerbs,
		},
	}
}

// metricsReaderRules are what a scraper of the operator's /metrics is
// granted by binding the ClusterRole MetricsReaderName.
func metricsReaderRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}
}

// leaderElectionRules lets the operator's replicas hold the leader Lease in
// their own namespace only.
func leaderElectionRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
	}
}
