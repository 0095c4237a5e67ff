package install_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform/aws"
	"hypershift.dev/internal/hostedref"
	"hypershift.dev/internal/install"
	"hypershift.dev/internal/testenv"
	"hypershift.dev/internal/version"
)

// TestOperatorWritesOnlyControlPlaneNamespaces: with everything `hypershift
// install` applies, the operator's ServiceAccount — which its ClusterRole
// lets write Secrets, workloads and namespaces everywhere — is refused
// those writes outside control-plane namespaces: a Secret or Deployment in
// a tenant's namespace, a tenant's Secret taken over by adding a
// HostedCluster owner, a namespace created or deleted that is not a
// control plane's. It may still write in a control-plane namespace, the
// admin kubeconfig Secret a HostedCluster owns beside it, and create and
// delete a control-plane namespace, and the Secret of an AWS cluster's
// identity (owner-labelled) in the namespace the AWS provider runs in, but
// not the provider's own Secrets there. EndpointSlices (the load-balancer
// mirrors' endpoints) are held to control-plane namespaces the same way.
func TestOperatorWritesOnlyControlPlaneNamespaces(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	admin := env.Client
	objs, err := install.ObjectsFor(install.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := install.Apply(ctx, admin, objs, func(string, string, install.Result) {}); err != nil {
		t.Fatal(err)
	}
	if install.DefaultAWSProviderNamespace != aws.DefaultProviderNamespace {
		t.Fatalf("the policy's default AWS provider namespace %s, the platform's %s", install.DefaultAWSProviderNamespace, aws.DefaultProviderNamespace)
	}
	operator := actingAs(t, env, "system:serviceaccount:"+install.DefaultNamespace+":"+install.OperatorName)
	const tenant, controlPlane = "tenant", "tenant-a"
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: tenant}},
		{ObjectMeta: metav1.ObjectMeta{Name: aws.DefaultProviderNamespace}},
		{ObjectMeta: metav1.ObjectMeta{Name: controlPlane, Labels: map[string]string{hostedref.ClusterUIDLabel: "0000"}}},
	} {
		if err := admin.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	// The owner exists: the management plane's garbage collector would
	// delete a Secret owned by a HostedCluster that does not, between the
	// operator's create and delete below.
	hc := hypershiftv1alpha1.NewHostedCluster(tenant, "a", hypershiftv1alpha1.NonePlatform, version.KubernetesVersion)
	hc.Spec.Services = hypershiftv1alpha1.APIServerPublishing(hypershiftv1alpha1.NodePort, "192.0.2.1", 0) // the kube runtime's
	if err := admin.Create(ctx, hc); err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name string, owned bool) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"k": []byte("v")}}
		if owned {
			s.OwnerReferences = []metav1.OwnerReference{{APIVersion: hypershiftv1alpha1.GroupVersion.String(), Kind: "HostedCluster", Name: hc.Name, UID: hc.UID}}
		}
		return s
	}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "miner"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "miner"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "miner"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/miner"}}},
			},
		},
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "the hypershift operator") {
			t.Errorf("the operator %s: %v, want a refusal by %s", what, err, install.OperatorScopePolicyName)
		}
	}
	// The policy is in force once the first refusal comes.
	testenv.Eventually(t, time.Minute, "the operator refused a Secret in a tenant's namespace", func() (bool, error) {
		err := operator.Create(ctx, secret(tenant, "planted", false))
		if err == nil {
			_ = admin.Delete(ctx, secret(tenant, "planted", false))
		}
		return err != nil && strings.Contains(err.Error(), "the hypershift operator"), err
	})
	refused("creates a Deployment in a tenant's namespace", operator.Create(ctx, deployment))
	slice := func(ns string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "lb-mirror"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		}
	}
	refused("creates an EndpointSlice in a tenant's namespace (a Service's endpoints taken over)", operator.Create(ctx, slice(tenant)))
	refused("creates a namespace that is not a control plane's", operator.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}))
	refused("deletes a tenant's namespace", operator.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}))

	theirs := secret(tenant, "theirs", false)
	if err := admin.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	refused("deletes a tenant's Secret", operator.Delete(ctx, theirs))
	takeover := secret(tenant, "theirs", true)
	takeover.ResourceVersion = theirs.ResourceVersion
	refused("takes a tenant's Secret over with a HostedCluster owner", operator.Update(ctx, takeover))

	// In the namespace cluster-api-provider-aws runs in, the Secrets of
	// AWS clusters' identities (owner-labelled) only: not the provider's
	// own, nor one made to look like a control plane's.
	providers := secret(aws.DefaultProviderNamespace, "capa-manager-bootstrap-credentials", false)
	if err := admin.Create(ctx, providers); err != nil {
		t.Fatal(err)
	}
	refused("creates an unlabelled Secret where CAPA runs", operator.Create(ctx, secret(aws.DefaultProviderNamespace, "planted", false)))
	refused("deletes CAPA's own Secret", operator.Delete(ctx, providers))
	relabelled := providers.DeepCopy()
	relabelled.Labels = map[string]string{hostedref.OwnerUIDLabel: "0000"}
	refused("takes CAPA's own Secret over with the owner label", operator.Update(ctx, relabelled))
	identity := secret(aws.DefaultProviderNamespace, "hypershift-tenant-a", false)
	identity.Labels = map[string]string{hostedref.OwnerUIDLabel: "0000"}

	for what, obj := range map[string]client.Object{
		"an AWS identity's Secret where CAPA runs":         identity,
		"a Secret in a control-plane namespace":            secret(controlPlane, "pki", false),
		"an EndpointSlice in a control-plane namespace":    slice(controlPlane),
		"the admin kubeconfig Secret a HostedCluster owns": secret(tenant, "a-admin-kubeconfig", true),
		"a control-plane namespace": &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Labels: map[string]string{
			hostedref.ClusterUIDLabel: "0001", hostedref.ClusterNameLabel: "b", hostedref.ClusterNamespaceLabel: tenant,
		}}},
	} {
		if err := operator.Create(ctx, obj); err != nil {
			t.Errorf("the operator creates %s: %v", what, err)
			continue
		}
		if err := operator.Delete(ctx, obj); err != nil {
			t.Errorf("the operator deletes %s: %v", what, err)
		}
	}
}
