package addons

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// objectVerbs are what applying, probing and deleting one named object
// needs: server-side apply is a patch, which the API server also
// authorizes as a create of that name when the object does not exist
// yet; the collision check and the probes read it.
var objectVerbs = []string{"create", "get", "patch", "delete"}

// hostedObject is an object of a hosted-cluster phase with what its RBAC
// needs: the resource, and for role bindings the role they grant.
type hostedObject struct {
	key        objectKey
	resource   string
	namespaced bool
	object     *unstructured.Unstructured
}

// connectorRules are the connector's permissions in the hosted cluster:
// for each object, objectVerbs on its resource and name only — in a Role
// of its namespace for a namespaced object, in the ClusterRole otherwise.
// Roles and ClusterRoles the addon declares also get escalate and bind
// (the API server lets nobody grant what they do not hold otherwise), and
// the role a declared binding refers to gets bind. Nothing else: no list,
// no Secret the addon did not declare.
func connectorRules(objs []hostedObject) (cluster []rbacv1.PolicyRule, namespaced map[string][]rbacv1.PolicyRule) {
	type target struct{ ns, group, resource string }
	names := map[target]map[string]map[string]bool{} // target -> name -> verbs
	add := func(t target, name string, verbs ...string) {
		if names[t] == nil {
			names[t] = map[string]map[string]bool{}
		}
		if names[t][name] == nil {
			names[t][name] = map[string]bool{}
		}
		for _, v := range verbs {
			names[t][name][v] = true
		}
	}
	for _, o := range objs {
		ns := ""
		if o.namespaced {
			ns = o.key.Namespace
		}
		t := target{ns: ns, group: o.key.Group, resource: o.resource}
		add(t, o.key.Name, objectVerbs...)
		if o.key.Group != rbacv1.GroupName {
			continue
		}
		switch o.key.Kind {
		case "Role", "ClusterRole":
			add(t, o.key.Name, "escalate", "bind")
		case "RoleBinding", "ClusterRoleBinding":
			kind, _, _ := unstructured.NestedString(o.object.Object, "roleRef", "kind")
			name, _, _ := unstructured.NestedString(o.object.Object, "roleRef", "name")
			resource := "clusterroles"
			if kind == "Role" {
				resource = "roles"
			}
			add(target{ns: ns, group: rbacv1.GroupName, resource: resource}, name, "bind")
		}
	}
	targets := make([]target, 0, len(names))
	for t := range names {
		targets = append(targets, t)
	}
	sort.Slice(targets, func(i, j int) bool {
		a, b := targets[i], targets[j]
		if a.ns != b.ns {
			return a.ns < b.ns
		}
		if a.group != b.group {
			return a.group < b.group
		}
		return a.resource < b.resource
	})
	namespaced = map[string][]rbacv1.PolicyRule{}
	for _, t := range targets {
		// One rule per distinct verb set keeps each name to exactly the
		// verbs it needs.
		byVerbs := map[string][]string{}
		verbsOf := map[string][]string{}
		for name, vs := range names[t] {
			verbs := make([]string, 0, len(vs))
			for v := range vs {
				verbs = append(verbs, v)
			}
			sort.Strings(verbs)
			k := join(verbs)
			byVerbs[k] = append(byVerbs[k], name)
			verbsOf[k] = verbs
		}
		keys := make([]string, 0, len(byVerbs))
		for k := range byVerbs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sort.Strings(byVerbs[k])
			rule := rbacv1.PolicyRule{APIGroups: []string{t.group}, Resources: []string{t.resource}, ResourceNames: byVerbs[k], Verbs: verbsOf[k]}
			if t.ns == "" {
				cluster = append(cluster, rule)
			} else {
				namespaced[t.ns] = append(namespaced[t.ns], rule)
			}
		}
	}
	return cluster, namespaced
}

func join(s []string) string {
	out := ""
	for _, v := range s {
		out += v + ","
	}
	return out
}
