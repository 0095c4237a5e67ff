package install

import (
	"regexp"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hypershift.dev/internal/version"
)

// Names of the version skew policies (and their bindings).
const (
	// NodePoolSkewPolicyName keeps a NodePool's version within the skew
	// its control plane allows.
	NodePoolSkewPolicyName = "nodepool-version-skew.hypershift.dev"
	// ControlPlaneSkewPolicyName keeps a control plane's new version
	// within the skew its NodePools allow.
	ControlPlaneSkewPolicyName = "hostedcluster-version-skew.hypershift.dev"
)

// MaxNodeSkew is how many minors a node may lag its control plane
// (upstream's version skew policy for the kubelet).
const MaxNodeSkew = 3

// versionPattern is the shape of a version the policies reason about;
// anything else is left to the CRDs' format rules.
const versionPattern = `^v1\\.[0-9]+\\.[0-9]+$`

var versionRE = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)

// celStrings is a CEL list literal of vs, leaving out anything that is not a
// version (a catalog's directory names are not trusted to be CEL-safe).
func celStrings(vs []string) string {
	quoted := make([]string, 0, len(vs))
	for _, v := range vs {
		if versionRE.MatchString(v) {
			quoted = append(quoted, strconv.Quote(v))
		}
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// availableVersionValidation refuses a HostedCluster whose
// spec.kubernetesVersion this installation cannot run, on create and when
// the version changes (a cluster whose release was removed from the
// installation can still be edited otherwise), naming the ones it can.
func availableVersionValidation(versions []string) admissionregistrationv1.Validation {
	return admissionregistrationv1.Validation{
		Expression: "!has(object.spec.kubernetesVersion) || object.spec.kubernetesVersion in " + celStrings(versions) +
			" || (request.operation == 'UPDATE' && has(oldObject.spec.kubernetesVersion) && oldObject.spec.kubernetesVersion == object.spec.kubernetesVersion)",
		MessageExpression: "'spec.kubernetesVersion: ' + object.spec.kubernetesVersion + ' is not available in this installation: use one of " +
			strings.Join(versions, ", ") + " (hypershift version lists them)'",
		Reason: ptr(metav1.StatusReasonInvalid),
	}
}

// minorOf is the CEL expression of the minor of version expression v
// (which matches versionPattern).
func minorOf(v string) string { return "int(" + v + ".substring(3, " + v + ".lastIndexOf('.')))" }

// allowedRange is the CEL expression of "v1.<lo>.x to v1.<hi>.x".
func allowedRange(lo, hi string) string {
	return "'v1.' + string(" + lo + ") + '.x to v1.' + string(" + hi + ") + '.x'"
}

// nodePoolSkewPolicy refuses a NodePool whose spec.kubernetesVersion is
// newer than its control plane or more than MaxNodeSkew minors older. The
// control plane is the HostedCluster of spec.clusterName in the pool's
// namespace, read as a parameter: its spec.kubernetesVersion (empty: the
// compiled-in version) and, while an upgrade rolls, its status.version
// (what runs), so that the pool fits both. A pool without a version
// follows its control plane; one whose cluster does not exist yet is
// admitted (parameterNotFoundAction Allow: the NodePool controller waits
// for the cluster).
func nodePoolSkewPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	return paramPolicy(NodePoolSkewPolicyName, "nodepools", "HostedCluster",
		[]admissionregistrationv1.MatchCondition{{
			Name: "version-set-or-changed",
			Expression: "has(object.spec.kubernetesVersion) && object.spec.kubernetesVersion.matches('" + versionPattern + "') && " +
				"(request.operation == 'CREATE' || !has(oldObject.spec.kubernetesVersion) || oldObject.spec.kubernetesVersion != object.spec.kubernetesVersion)",
		}},
		[]admissionregistrationv1.Variable{
			{Name: "mine", Expression: "params.metadata.name == object.spec.clusterName"},
			{Name: "pool", Expression: minorOf("object.spec.kubernetesVersion")},
			{Name: "target", Expression: "has(params.spec.kubernetesVersion) ? params.spec.kubernetesVersion : '" + version.KubernetesVersion + "'"},
			{Name: "running", Expression: "has(params.status) && has(params.status.version) && params.status.version.matches('" + versionPattern + "') ? params.status.version : variables.target"},
			{Name: "planes", Expression: "[" + minorOf("variables.target") + ", " + minorOf("variables.running") + "]"},
		},
		admissionregistrationv1.Validation{
			Expression: "!variables.mine || variables.planes.all(m, variables.pool <= m && variables.pool >= m - " + strconv.Itoa(MaxNodeSkew) + ")",
			MessageExpression: "'spec.kubernetesVersion: ' + object.spec.kubernetesVersion + ' of NodePool ' + object.metadata.name + ' is ' + " +
				"(variables.pool > variables.planes.min() ? 'newer than its control plane' : 'more than " + strconv.Itoa(MaxNodeSkew) + " minor versions older than its control plane') + " +
				"' (HostedCluster ' + params.metadata.name + ' runs ' + variables.running + " +
				"(variables.running != variables.target ? ', upgrading to ' + variables.target : '') + '): use ' + " +
				allowedRange("variables.planes.max() - "+strconv.Itoa(MaxNodeSkew), "variables.planes.min()"),
			Reason: ptr(metav1.StatusReasonInvalid),
		})
}

// controlPlaneSkewPolicy refuses a HostedCluster whose new
// spec.kubernetesVersion would move the control plane past the skew one of
// its NodePools allows: older than the pool, or more than MaxNodeSkew
// minors newer. The pools are read as parameters (those of the cluster's
// namespace whose spec.clusterName names it); a pool without a version
// follows the control plane.
func controlPlaneSkewPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	return paramPolicy(ControlPlaneSkewPolicyName, "hostedclusters", "NodePool",
		[]admissionregistrationv1.MatchCondition{{
			Name: "version-changed",
			Expression: "request.operation == 'CREATE' || " +
				"(has(object.spec.kubernetesVersion) ? object.spec.kubernetesVersion : '') != (has(oldObject.spec.kubernetesVersion) ? oldObject.spec.kubernetesVersion : '')",
		}},
		[]admissionregistrationv1.Variable{
			{Name: "target", Expression: "has(object.spec.kubernetesVersion) ? object.spec.kubernetesVersion : '" + version.KubernetesVersion + "'"},
			{Name: "mine", Expression: "params.spec.clusterName == object.metadata.name && has(params.spec.kubernetesVersion) && " +
				"params.spec.kubernetesVersion.matches('" + versionPattern + "') && variables.target.matches('" + versionPattern + "')"},
		},
		admissionregistrationv1.Validation{
			Expression: "!variables.mine || (" + minorOf("variables.target") + " >= " + minorOf("params.spec.kubernetesVersion") +
				" && " + minorOf("variables.target") + " <= " + minorOf("params.spec.kubernetesVersion") + " + " + strconv.Itoa(MaxNodeSkew) + ")",
			MessageExpression: "'spec.kubernetesVersion: ' + variables.target + ' would make the control plane ' + " +
				"(" + minorOf("variables.target") + " < " + minorOf("params.spec.kubernetesVersion") + " ? 'older than' : 'more than " + strconv.Itoa(MaxNodeSkew) + " minor versions newer than') + " +
				"' NodePool ' + params.metadata.name + ' (' + params.spec.kubernetesVersion + '): use ' + " +
				allowedRange(minorOf("params.spec.kubernetesVersion"), minorOf("params.spec.kubernetesVersion")+" + "+strconv.Itoa(MaxNodeSkew)) +
				" + ', or change the NodePool first'",
			Reason: ptr(metav1.StatusReasonInvalid),
		})
}

// paramPolicy is a policy on creates and updates of resource, which reads
// the objects of paramKind (bound by paramBinding) as parameters, and its
// binding.
func paramPolicy(name, resource, paramKind string, match []admissionregistrationv1.MatchCondition,
	variables []admissionregistrationv1.Variable, validation admissionregistrationv1.Validation,
) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr(admissionregistrationv1.Fail),
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: "hypershift.dev/v1alpha1", Kind: paramKind},
			MatchConstraints: matchResource(resource, admissionregistrationv1.Create, admissionregistrationv1.Update),
			MatchConditions:  match,
			Variables:        variables,
			Validations:      []admissionregistrationv1.Validation{validation},
		},
	}
	return p, paramBinding(name)
}

// matchResource matches ops on one resource of hypershift.dev/v1alpha1.
func matchResource(resource string, ops ...admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
	return &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: ops,
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{"hypershift.dev"},
					APIVersions: []string{"v1alpha1"},
					Resources:   []string{resource},
				},
			},
		}},
	}
}

// paramBinding binds a policy with every object of its paramKind in the
// admitted object's namespace as parameters (each must admit it), and
// admits when there is none.
func paramBinding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name,
			ParamRef: &admissionregistrationv1.ParamRef{
				Selector:                &metav1.LabelSelector{},
				ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction),
			},
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}
