package cli

import (
	"bytes"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"hypershift.dev/internal/install"
	"hypershift.dev/internal/scheme"
)

// create cluster without publishing flags on the kube runtime takes
// install.DefaultPublishing's choice and says which node's address it is.
func TestDefaultPublishingSaysWhere(t *testing.T) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: install.RuntimePolicyName, Labels: map[string]string{install.RuntimeLabel: install.RuntimeKube},
	}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "d"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.4"}}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(policy, node).Build()
	o := &createClusterOptions{publishing: "HostPort"}
	var out bytes.Buffer
	if err := o.defaultPublishing(t.Context(), c, &out); err != nil {
		t.Fatal(err)
	}
	if o.publishing != "NodePort" || o.apiServerAddress != "10.0.0.4" {
		t.Errorf("publishing %s at %q, want NodePort at 10.0.0.4", o.publishing, o.apiServerAddress)
	}
	if said := out.String(); !strings.Contains(said, "NodePort at node d's address 10.0.0.4") {
		t.Errorf("said %q", said)
	}
}
