package addons

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestConnectorRules(t *testing.T) {
	binding := &unstructured.Unstructured{Object: map[string]any{"roleRef": map[string]any{"kind": "ClusterRole", "name": "addon-reader"}}}
	objs := []hostedObject{
		{key: objectKey{Hosted: true, Kind: "Namespace", Name: "addon"}, resource: "namespaces"},
		{key: objectKey{Hosted: true, Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "addon-reader"}, resource: "clusterroles"},
		{key: objectKey{Hosted: true, Group: "rbac.authorization.k8s.io", Kind: "RoleBinding", Namespace: "addon", Name: "addon-reader"}, resource: "rolebindings", namespaced: true, object: binding},
		{key: objectKey{Hosted: true, Kind: "ConfigMap", Namespace: "addon", Name: "config"}, resource: "configmaps", namespaced: true},
		{key: objectKey{Hosted: true, Kind: "ConfigMap", Namespace: "addon", Name: "more"}, resource: "configmaps", namespaced: true},
	}
	cluster, namespaced := connectorRules(objs)
	wantCluster := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"addon"}, Verbs: []string{"create", "delete", "get", "patch"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"addon-reader"}, Verbs: []string{"bind", "create", "delete", "escalate", "get", "patch"}},
	}
	wantNS := map[string][]rbacv1.PolicyRule{"addon": {
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"config", "more"}, Verbs: []string{"create", "delete", "get", "patch"}},
		// A RoleBinding may grant the ClusterRole in its namespace only.
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"addon-reader"}, Verbs: []string{"bind"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, ResourceNames: []string{"addon-reader"}, Verbs: []string{"create", "delete", "get", "patch"}},
	}}
	if !reflect.DeepEqual(cluster, wantCluster) {
		t.Errorf("cluster rules\n got %+v\nwant %+v", cluster, wantCluster)
	}
	if !reflect.DeepEqual(namespaced, wantNS) {
		t.Errorf("namespaced rules\n got %+v\nwant %+v", namespaced, wantNS)
	}
	for _, rules := range append([][]rbacv1.PolicyRule{cluster}, namespaced["addon"]) {
		for _, r := range rules {
			if len(r.ResourceNames) == 0 {
				t.Errorf("rule %+v is not limited to names", r)
			}
			for _, v := range r.Verbs {
				if v == "list" || v == "watch" || v == "*" {
					t.Errorf("rule %+v grants %s", r, v)
				}
			}
		}
	}
}
