package install

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hypershift.dev/internal/version"
)

// NodeReleasePolicyName names the policy (and its binding) that refuses a
// platform None NodePool whose nodes could not get a kubelet of its
// version. There is one per cluster, written for the installed runtime.
const NodeReleasePolicyName = "nodepool-release.hypershift.dev"

// nodeReleasePolicy refuses, on create and when the version changes, a
// None pool at a version its nodes cannot run: real nodes fetch the
// kubelet of their pool's version from the control plane's release
// server, which serves the installation's releases on the process
// runtime; on the kube runtime no release server runs, so nodes run the
// kubelet compiled into hypershift. Simulated pools only report a
// version and are left to the skew policy. The NodePool controller's
// pinning of an empty version to its control plane's is not checked: that
// version is the control plane's own (on the kube runtime, `hypershift
// join` at another release then fails, naming the ConfigMap of releases
// the control plane does not publish).
func nodeReleasePolicy(runtime string, versions []string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	why := "this installation has no release of it to hand its nodes"
	if runtime == RuntimeKube {
		versions = []string{version.KubernetesVersion}
		why = "on the kube runtime real nodes run the kubelet compiled into hypershift (the release server that hands nodes other releases runs on the process runtime only)"
	}
	return policy(NodeReleasePolicyName, "nodepools",
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		[]admissionregistrationv1.MatchCondition{{
			Name: "none-pool-version-set-or-changed",
			Expression: "has(object.spec.platform) && has(object.spec.platform.type) && object.spec.platform.type == 'None' && " +
				"has(object.spec.kubernetesVersion) && " +
				"(request.operation == 'CREATE' || (has(oldObject.spec.kubernetesVersion) && oldObject.spec.kubernetesVersion != object.spec.kubernetesVersion))",
		}},
		admissionregistrationv1.Validation{
			Expression: "object.spec.kubernetesVersion in " + celStrings(versions),
			MessageExpression: "'spec.kubernetesVersion: ' + object.spec.kubernetesVersion + ' of platform None NodePool ' + object.metadata.name + " +
				"' is not available for real nodes: " + why + "; use " + strings.Join(versions, " or ") + "'",
			Reason: ptr(metav1.StatusReasonInvalid),
		})
}
