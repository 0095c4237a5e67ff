package install_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"hypershift.dev/internal/install"
	"hypershift.dev/internal/scheme"
)

func runtimePolicy(runtime string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: install.RuntimePolicyName, Labels: map[string]string{install.RuntimeLabel: runtime},
	}}
}

func node(name, ip string, ready, cordoned bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.Unschedulable = cordoned
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	if ip != "" {
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}
	}
	return n
}

const fix = "give --api-server-publishing NodePort --api-server-address NODE_ADDRESS, or --api-server-publishing LoadBalancer --api-server-address DNS_NAME"

// On the kube runtime, create cluster without publishing flags publishes a
// NodePort at the first usable node's address and says where; on a plane of
// `up` (or an install that does not say its runtime) HostPort stays; with
// no usable node, or nodes it may not read, it refuses naming the flags.
func TestDefaultPublishing(t *testing.T) {
	listForbidden := interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New(`nodes is forbidden: User "alice" cannot list resource "nodes"`)
	}}
	for _, tt := range []struct {
		name        string
		objs        []client.Object
		funcs       interceptor.Funcs
		wantPublish string
		wantAddress string
		wantErr     string
	}{
		{name: "process runtime", objs: []client.Object{runtimePolicy(install.RuntimeProcess), node("a", "10.0.0.1", true, false)}, wantPublish: "HostPort"},
		{name: "no policy", objs: []client.Object{node("a", "10.0.0.1", true, false)}, wantPublish: "HostPort"},
		{
			name: "kube runtime: the first Ready, schedulable node with an InternalIP",
			objs: []client.Object{
				runtimePolicy(install.RuntimeKube),
				node("a-notready", "10.0.0.1", false, false), node("b-cordoned", "10.0.0.2", true, true),
				node("c-noaddress", "", true, false), node("e", "10.0.0.5", true, false), node("d", "10.0.0.4", true, false),
			},
			wantPublish: "NodePort", wantAddress: "10.0.0.4",
		},
		{
			name: "kube runtime, no usable node", objs: []client.Object{runtimePolicy(install.RuntimeKube), node("a", "10.0.0.1", false, false)},
			wantErr: "has no Ready node with an InternalIP to publish a NodePort on: give --api-server-publishing NodePort --api-server-address NODE_ADDRESS",
		},
		{
			name: "kube runtime, nodes not readable", objs: []client.Object{runtimePolicy(install.RuntimeKube)}, funcs: listForbidden,
			wantErr: `cannot be read to choose an address (nodes is forbidden: User "alice" cannot list resource "nodes"): give --api-server-publishing NodePort`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tt.objs...).WithInterceptorFuncs(tt.funcs).Build()
			publishing, address, said := "HostPort", "", ""
			choice, err := install.DefaultPublishing(t.Context(), c, fix)
			if choice != nil {
				publishing, address = string(choice.Publishing), choice.Address
				said = fmt.Sprintf("NodePort at node %s's address %s", choice.Node, choice.Address)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DefaultPublishing = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if publishing != tt.wantPublish || address != tt.wantAddress {
				t.Errorf("publishing %s at %q, want %s at %q", publishing, address, tt.wantPublish, tt.wantAddress)
			}
			if (tt.wantAddress != "") != strings.Contains(said, "NodePort at node d's address 10.0.0.4") {
				t.Errorf("said %q", said)
			}
		})
	}
}
