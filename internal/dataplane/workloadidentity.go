package dataplane

import (
	"errors"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hypershift.dev/internal/pki"
)

// WorkloadIdentityWebhookName names the webhook's registration and the
// RBAC of its reads in the hosted cluster.
const WorkloadIdentityWebhookName = "hypershift-workload-identity"

// WorkloadIdentityWebhook is where the hosted API server calls the
// workload-identity webhook beside it, and the CA bundle it verifies the
// webhook's certificate with.
type WorkloadIdentityWebhook struct {
	URL      string
	CABundle []byte
}

// workloadIdentityObjects register the webhook for pod creation and let
// its user get ServiceAccounts, nothing else. Its failure policy is Fail,
// as Azure Workload Identity's: a pod whose ServiceAccount grants cloud
// credentials must not start without them. kube-system is left out, so
// the cluster's own pods (DNS, the Konnectivity agent) start while the
// webhook does not answer.
func workloadIdentityObjects(w WorkloadIdentityWebhook) ([]client.Object, error) {
	if w.URL == "" || len(w.CABundle) == 0 {
		return nil, errors.New("workload-identity webhook: the registration needs its URL and CA bundle")
	}
	return []client.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: WorkloadIdentityWebhookName},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"get"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: WorkloadIdentityWebhookName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: WorkloadIdentityWebhookName},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: pki.WorkloadIdentityWebhookUser}},
		},
		&admissionregistrationv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: WorkloadIdentityWebhookName},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name:         "pod-identity.hypershift.dev",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(w.URL), CABundle: w.CABundle},
				Rules: []admissionregistrationv1.RuleWithOperations{{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{
						APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
						Scope: ptr.To(admissionregistrationv1.NamespacedScope),
					},
				}},
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{kubeSystem},
				}}},
				FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
				ReinvocationPolicy:      ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
				TimeoutSeconds:          ptr.To[int32](10),
				MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			}},
		},
	}, nil
}
