package dataplane

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/nodes/bootstrap"
)

// ReleasesReader is the Role (and RoleBinding) in kube-public that lets
// bootstrap tokens and nodes read the releases ConfigMap.
const ReleasesReader = "hypershift:releases-reader"

// Releases is what joined nodes (platform None) are told about the
// control plane's release server: its URL and the sha256 of each release
// it serves, which a node checks every download against.
type Releases struct {
	URL    string
	SHA256 map[string]string
}

// releasesObjects are the ConfigMap kube-public/hypershift-releases and
// the RBAC that lets system:bootstrappers (a node joining with a token)
// and system:nodes (a kubelet's certificate) get it, and nothing else.
func releasesObjects(r Releases) []client.Object {
	info := bootstrap.ReleasesInfo{URL: r.URL, SHA256: r.SHA256}
	ns := bootstrap.ReleasesInfoNamespace
	return []client.Object{
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ReleasesReader},
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{bootstrap.ReleasesInfoName}, Verbs: []string{"get"},
			}},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ReleasesReader},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: ReleasesReader},
			Subjects: []rbacv1.Subject{
				{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:bootstrappers"},
				{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"},
			},
		},
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bootstrap.ReleasesInfoName},
			Data:       info.Data(),
		},
	}
}
