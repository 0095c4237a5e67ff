package install

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/runtime"
)

// RuntimePolicyName names the admission policy (and its binding) that
// refuses HostedCluster specs the installed runtime cannot run. There is one
// per cluster: installing the other runtime replaces it.
const RuntimePolicyName = "hostedcluster-runtime.hypershift.dev"

// RuntimeLabel on the runtime policy names the runtime installed
// (RuntimeProcess or RuntimeKube), for clients that choose defaults by it.
const RuntimeLabel = "hypershift.dev/runtime"

// InstalledRuntime is the runtime the management cluster of c was
// installed with, read from its runtime policy: "" when there is none, or
// when it was installed before the policy said so.
func InstalledRuntime(ctx context.Context, c client.Reader) (string, error) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := c.Get(ctx, client.ObjectKey{Name: RuntimePolicyName}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("read admission policy %s: %w", RuntimePolicyName, err)
	}
	return p.Labels[RuntimeLabel], nil
}

// namespaceLengthPolicy rejects a HostedCluster whose control-plane namespace
// NAMESPACE-NAME would exceed 63 characters. A CRD's own CEL rules cannot
// see metadata.namespace; an admission policy can.
func namespaceLengthPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	return policy("hostedcluster-namespace-length.hypershift.dev", "hostedclusters",
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create}, nil,
		admissionregistrationv1.Validation{
			Expression:        "size(object.metadata.namespace) + 1 + size(object.metadata.name) <= 63",
			MessageExpression: "'metadata.name: the control-plane namespace ' + object.metadata.namespace + '-' + object.metadata.name + ' would be longer than 63 characters; use a shorter name or namespace'",
			Reason:            ptr(metav1.StatusReasonInvalid),
		})
}

// ControlPlanePolicyName names the admission policy that keeps
// HostedControlPlanes to the operator.
const ControlPlanePolicyName = "hostedcontrolplane-operator.hypershift.dev"

// controlPlanePolicy keeps HostedControlPlanes to the operator, which makes
// them from HostedClusters: only it (and system:masters) may create one or
// set, change or remove its hypershift.dev/ annotations — among them the
// requests it acts on with its own authority (restore-from, backup-request,
// fenced). A namespace user who may write HostedControlPlanes (an
// aggregated edit role, a careless grant) can still change what is not a
// request. operatorUser is the operator's user on the kube runtime; on the
// process runtime the operator is system:masters.
func controlPlanePolicy(operatorUser string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	trusted := "'system:masters' in request.userInfo.groups"
	if operatorUser != "" {
		trusted = "request.userInfo.username == '" + operatorUser + "' || " + trusted
	}
	const (
		a    = "object.metadata.annotations"
		oldA = "oldObject.metadata.annotations"
	)
	// Every hypershift.dev/ annotation is as it was, and none was removed.
	unchanged := "request.operation == 'CREATE' || (" +
		"(!has(" + a + ") || " + a + ".all(k, !k.startsWith('hypershift.dev/') || (has(" + oldA + ") && k in " + oldA + " && " + oldA + "[k] == " + a + "[k]))) && " +
		"(!has(" + oldA + ") || " + oldA + ".all(k, !k.startsWith('hypershift.dev/') || (has(" + a + ") && k in " + a + "))))"
	return policy(ControlPlanePolicyName, "hostedcontrolplanes",
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		[]admissionregistrationv1.MatchCondition{{Name: "not-the-operator", Expression: "!(" + trusted + ")"}},
		admissionregistrationv1.Validation{
			Expression: "request.operation != 'CREATE'",
			Message:    "HostedControlPlanes are made by the hypershift operator from a HostedCluster: create a HostedCluster (hypershift create cluster)",
			Reason:     ptr(metav1.StatusReasonForbidden),
		},
		admissionregistrationv1.Validation{
			Expression: unchanged,
			Message: "metadata.annotations: the hypershift.dev/ annotations of a HostedControlPlane are set by the hypershift operator only;" +
				" restore, backup and fence requests go on its HostedCluster (hypershift restore cluster, backup cluster, fence)",
			Reason: ptr(metav1.StatusReasonForbidden),
		})
}

// The expressions read the object as unstructured data, guarded by has():
// they compile and hold whether or not the CRD declares a field yet.
const (
	// publishedTypes lists "service=type" of the services whose type fails
	// the test OK, which names the type as t.
	publishedTypes = `(has(object.spec.services) ? object.spec.services : []).filter(s, has(s.servicePublishingStrategy) && has(s.servicePublishingStrategy.type) && !(%s)).map(s, s.service + '=' + s.servicePublishingStrategy.type)`
	etcdStorage    = `has(object.spec.etcd) && has(object.spec.etcd.managed) && has(object.spec.etcd.managed.storage)`
	volumeMirror   = `has(object.spec.platform) && has(object.spec.platform.host) && has(object.spec.platform.host.storageDriver) && has(object.spec.platform.host.storageDriver.type) && object.spec.platform.host.storageDriver.type == 'Manual'`
)

// capabilitiesOf is what runtime (RuntimeProcess or RuntimeKube) can do.
func capabilitiesOf(rt string) runtime.Capabilities {
	if rt == RuntimeKube {
		return runtime.Kube
	}
	return runtime.Process
}

// runtimePolicy refuses what the runtime cannot do (its capabilities),
// naming the field and the fix: among it a Kubernetes version other than
// versions (the releases of the installation's catalog). It checks creates
// and those updates that change the spec, so that an object made under
// another runtime can still get its finalizers removed.
func runtimePolicy(rt string, versions []string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	caps := capabilitiesOf(rt)
	validations := []admissionregistrationv1.Validation{publishingValidation(caps)}
	if !caps.PublishesOn(string(hypershiftv1alpha1.HostPort)) {
		validations = append(validations, admissionregistrationv1.Validation{
			// No entry means HostPort.
			Expression: "has(object.spec.services) && object.spec.services.exists(s, s.service == 'APIServer')",
			Message: "spec.services needs an APIServer entry of type " + strings.Join(caps.Publishing, " or ") + ": the " + caps.Name + " runtime cannot publish on a host port" +
				" (hypershift create cluster --api-server-publishing NodePort --api-server-address ADDRESS)",
			Reason: ptr(metav1.StatusReasonInvalid),
		})
	}
	if !caps.Volumes {
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: "!(" + etcdStorage + ")",
			Message: "spec.etcd.managed.storage is not supported: the " + caps.Name + " runtime keeps etcd's data in the operator's data dir;" +
				" remove spec.etcd.managed.storage (persistent volumes need the kube runtime of `hypershift install`)",
			Reason: ptr(metav1.StatusReasonInvalid),
		})
	}
	if !caps.WakeOnRequest {
		validations = append(validations, idleWakeRefused())
	}
	if !caps.AttachesVolumes {
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: "!(" + volumeMirror + ")",
			Message: "spec.platform.host.storageDriver type Manual is not supported: the " + caps.Name + " runtime's machines are not pods of a management cluster, to which volumes are attached;" +
				" remove spec.platform.host.storageDriver (volumes of the management cluster need the kube runtime of `hypershift install`)",
			Reason: ptr(metav1.StatusReasonInvalid),
		})
	}
	if !caps.HostFiles {
		validations = append(validations, fileRestoreRefused())
	}
	validations = append(validations, availableVersionValidation(versions))
	p, b := policy(RuntimePolicyName, "hostedclusters",
		[]admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		[]admissionregistrationv1.MatchCondition{{
			Name:       "spec-changed",
			Expression: "request.operation == 'CREATE' || !has(oldObject.spec) || !has(object.spec) || object.spec != oldObject.spec",
		}},
		validations...)
	p.Labels = map[string]string{RuntimeLabel: caps.Name}
	return p, b
}

// publishingValidation refuses a service published by a strategy the
// runtime does not offer.
func publishingValidation(caps runtime.Capabilities) admissionregistrationv1.Validation {
	quoted := make([]string, len(caps.Publishing))
	for i, p := range caps.Publishing {
		quoted[i] = "'" + p + "'"
	}
	wrong := fmt.Sprintf(publishedTypes, "s.servicePublishingStrategy.type in ["+strings.Join(quoted, ", ")+"]")
	how, hint := "publishes the API server on a port of the management host", " (NodePort and LoadBalancer need the kube runtime of `hypershift install`)"
	if caps.Pods {
		how, hint = "publishes through Services", ""
	}
	return admissionregistrationv1.Validation{
		Expression: "size(" + wrong + ") == 0",
		MessageExpression: "'spec.services[].servicePublishingStrategy.type: ' + " + wrong + ".join(', ') +" +
			" ' is not supported: the " + caps.Name + " runtime " + how + ": use " + strings.Join(caps.Publishing, " or ") + hint + "'",
		Reason: ptr(metav1.StatusReasonInvalid),
	}
}

// fileRestoreRefused is the kube runtime's refusal of a restore from a
// file:// archive: the operator and the restoring etcd pods would look for
// it in their own pods' file systems. Refused here, `restore cluster`'s
// dry run stops before anything is created.
func fileRestoreRefused() admissionregistrationv1.Validation {
	const a = "object.metadata.annotations['hypershift.dev/restore-from']"
	return admissionregistrationv1.Validation{
		Expression: "!has(object.metadata.annotations) || !('hypershift.dev/restore-from' in object.metadata.annotations) || !" + a + `.matches('"url"\\s*:\\s*"file:')`,
		Message: "metadata.annotations[hypershift.dev/restore-from]: a file:// archive is not supported on the kube runtime: the operator and etcd's pods would read it from their own file systems;" +
			" restore from a bucket they reach (s3://BUCKET/KEY?…)",
		Reason: ptr(metav1.StatusReasonInvalid),
	}
}

// policy is a ValidatingAdmissionPolicy on ops of one resource of
// hypershift.dev/v1alpha1 and its binding, which denies what the
// validations refuse.
func policy(name, resource string, ops []admissionregistrationv1.OperationType, match []admissionregistrationv1.MatchCondition,
	validations ...admissionregistrationv1.Validation,
) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr(admissionregistrationv1.Fail),
			MatchConstraints: matchResource(resource, ops...),
			MatchConditions:  match,
			Validations:      validations,
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}

// OperatorScopePolicyName names the admission policy that keeps the kube
// runtime's operator to the namespaces of control planes.
const OperatorScopePolicyName = "operator-scope.hypershift.dev"

// DefaultAWSProviderNamespace is where cluster-api-provider-aws runs
// unless the operator is told otherwise, as the provider's release
// manifests install it (the AWS platform's aws.DefaultProviderNamespace).
const DefaultAWSProviderNamespace = "capa-system"

// operatorScopeResources are the kinds the operator's ClusterRole lets it
// write in every namespace (RBAC has no "namespaces labelled so"); the
// policy takes that back to control-plane namespaces.
var operatorScopeResources = []admissionregistrationv1.Rule{
	{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"secrets", "services", "persistentvolumeclaims", "namespaces"}},
	{APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"deployments", "statefulsets"}},
	{APIGroups: []string{"policy"}, APIVersions: []string{"*"}, Resources: []string{"poddisruptionbudgets"}},
	{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"networkpolicies"}},
	{APIGroups: []string{"discovery.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"endpointslices"}},
}

// operatorScopePolicy takes the kube runtime operator's writes back to
// control-plane namespaces, so that a bug of the operator (or its stolen
// token) is not administrator of the management cluster: Secrets,
// Services, claims and workloads are created,
// changed or deleted only in a namespace labelled as a HostedCluster's
// control-plane namespace (its UID, or — made before UID labels — its
// namespace and name, set when the operator creates it), and a namespace
// only when it is one before and after. The one write beside a
// HostedCluster, its admin kubeconfig Secret, is admitted when the Secret
// is owned by a HostedCluster before and after; the other, the Secret of an
// AWS cluster's identity in the namespace cluster-api-provider-aws runs in
// (awsNamespace; "": its default), when it carries the owner label of the
// objects the NodePool controller makes, before and after, so that the
// provider's own Secrets stay out of reach. Reads stay cluster-wide:
// admission does not see them.
func operatorScopePolicy(operatorUser, awsNamespace string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	isControlPlane := func(o string) string {
		return "has(" + o + ".metadata.labels) && ('" + hostedref.ClusterUIDLabel + "' in " + o + ".metadata.labels || ('" +
			hostedref.ClusterNameLabel + "' in " + o + ".metadata.labels && '" + hostedref.ClusterNamespaceLabel + "' in " + o + ".metadata.labels))"
	}
	ownedByCluster := func(o string) string {
		return "has(" + o + ".metadata.ownerReferences) && " + o + ".metadata.ownerReferences.exists(r, r.kind == 'HostedCluster' && r.apiVersion.startsWith('hypershift.dev/'))"
	}
	if awsNamespace == "" {
		awsNamespace = DefaultAWSProviderNamespace
	}
	ownerLabelled := func(o string) string {
		return "has(" + o + ".metadata.labels) && '" + hostedref.OwnerUIDLabel + "' in " + o + ".metadata.labels"
	}
	p, b := policy(OperatorScopePolicyName, "", nil,
		[]admissionregistrationv1.MatchCondition{{Name: "the-operator", Expression: "request.userInfo.username == '" + operatorUser + "'"}},
		admissionregistrationv1.Validation{
			Expression: "request.resource.resource == 'namespaces' || (namespaceObject != null && (" + isControlPlane("namespaceObject") + ")) || " +
				"(request.resource.resource == 'secrets' && (object == null || (" + ownedByCluster("object") + ")) && (oldObject == null || (" + ownedByCluster("oldObject") + "))) || " +
				"(request.resource.resource == 'secrets' && request.namespace == '" + awsNamespace + "' && (object == null || (" + ownerLabelled("object") + ")) && (oldObject == null || (" + ownerLabelled("oldObject") + ")))",
			MessageExpression: "'the hypershift operator writes ' + request.resource.resource + ' only in control-plane namespaces (labelled " + hostedref.ClusterUIDLabel +
				"); ' + request.namespace + ' is not one'",
			Reason: ptr(metav1.StatusReasonForbidden),
		},
		admissionregistrationv1.Validation{
			Expression:        "request.resource.resource != 'namespaces' || ((object == null || (" + isControlPlane("object") + ")) && (oldObject == null || (" + isControlPlane("oldObject") + ")))",
			MessageExpression: "'the hypershift operator creates, changes and deletes only control-plane namespaces (labelled " + hostedref.ClusterUIDLabel + "); ' + request.name + ' is not one'",
			Reason:            ptr(metav1.StatusReasonForbidden),
		})
	ops := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}
	rules := make([]admissionregistrationv1.NamedRuleWithOperations, 0, len(operatorScopeResources))
	for _, r := range operatorScopeResources {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: ops, Rule: r}})
	}
	p.Spec.MatchConstraints = &admissionregistrationv1.MatchResources{ResourceRules: rules}
	return p, b
}
