package konnectivity

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/apiserver-network-proxy/proto/header"

	"hypershift.dev/internal/nodes/bootstrap"
)

// TestAgentIdentity: an agent is accepted only under the name of the node
// its token is bound to, and only for that node's recorded addresses. The
// token reviews here are answered by a table of tokens, as the hosted API
// server would answer them (TestTunnelCarriesTraffic asks a real one).
func TestAgentIdentity(t *testing.T) {
	const sa = "system:serviceaccount:kube-system:konnectivity-agent"
	node := func(name, uid string, recorded ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{}}}
		n.Status.Addresses = []corev1.NodeAddress{}
		for _, a := range recorded {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		if recorded != nil {
			n.Labels, _ = bootstrap.AddressRecord(n, nil)
		}
		if uid != "" {
			n.UID = types.UID("uid-" + uid)
		}
		return n
	}
	// Two nodes with recorded addresses; n3 joined but has no record yet;
	// n4 was deleted and came back under the same name.
	kube := fake.NewClientset(
		node("n1", "", "10.0.0.1", "fd00::1"), node("n2", "", "10.0.0.2"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", UID: "uid-n3"}}, node("n4", "n4-again", "10.0.0.4"),
	)
	users := map[string]authv1.UserInfo{
		"n1":        {Username: sa, Extra: map[string]authv1.ExtraValue{serviceaccount.NodeNameKey: {"n1"}, serviceaccount.NodeUIDKey: {"uid-n1"}}},
		"n3":        {Username: sa, Extra: map[string]authv1.ExtraValue{serviceaccount.NodeNameKey: {"n3"}}},
		"n4":        {Username: sa, Extra: map[string]authv1.ExtraValue{serviceaccount.NodeNameKey: {"n4"}, serviceaccount.NodeUIDKey: {"uid-n4"}}},
		"unbound":   {Username: sa},
		"other-sa":  {Username: "system:serviceaccount:kube-system:default", Extra: map[string]authv1.ExtraValue{serviceaccount.NodeNameKey: {"n1"}}},
		"wrong-aud": {Username: sa, Extra: map[string]authv1.ExtraValue{serviceaccount.NodeNameKey: {"n1"}}},
	}
	kube.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authv1.TokenReview)
		u, ok := users[r.Spec.Token]
		r.Status.Authenticated = ok
		if ok && r.Spec.Token != "wrong-aud" {
			r.Status.Audiences = r.Spec.Audiences
		}
		r.Status.User = u
		return true, r, nil
	})
	ids := newNodeIdentity(kube, "kube-system", "konnectivity-agent", "system:konnectivity-server")

	for _, tt := range []struct {
		name, id, token, idents, want string
	}{
		{name: "its own addresses", id: "n1", token: "n1", idents: "ipv4=10.0.0.1&ipv6=fd00:0:0::1&host=n1"},
		{name: "no identifiers", id: "n1", token: "n1"},
		{name: "another node's address", id: "n1", token: "n1", idents: "ipv4=10.0.0.2", want: "ipv4=10.0.0.2 is not an address recorded for the node (10.0.0.1, fd00::1)"},
		{name: "an address it does not hold", id: "n1", token: "n1", idents: "ipv4=10.0.0.1&ipv4=10.9.9.9", want: "10.9.9.9 is not an address recorded"},
		{name: "another node's name", id: "n1", token: "n1", idents: "host=n2", want: "host=n2 is not the node's name"},
		{name: "a CIDR", id: "n1", token: "n1", idents: "cidr=10.0.0.0/8", want: `kind "cidr" is not accepted`},
		{name: "the default route", id: "n1", token: "n1", idents: "default-route=true", want: `kind "default-route" is not accepted`},
		{name: "another node's ID", id: "n2", token: "n1", idents: "ipv4=10.0.0.2", want: `agent ID "n2" is not the name of its node "n1"`},
		{name: "no token", id: "n1", idents: "ipv4=10.0.0.1", want: "expected one Authorization, got 0: the agent needs --service-account-token-path"},
		{name: "an unknown token", id: "n1", token: "forged", want: "token not authenticated"},
		{name: "a token of another audience", id: "n1", token: "wrong-aud", want: "token not for audience system:konnectivity-server"},
		{name: "another ServiceAccount's token", id: "n1", token: "other-sa", want: `token of "system:serviceaccount:kube-system:default"`},
		{name: "a token bound to no node", id: "n1", token: "unbound", want: "not bound to a pod on a node"},
		{name: "a node with no record yet", id: "n3", token: "n3", want: "node n3: no addresses recorded yet"},
		{name: "a node deleted and made again", id: "n4", token: "n4", idents: "ipv4=10.0.0.4", want: "not the one the token was bound to"},
		{name: "an ID too long", id: strings.Repeat("n", 300), token: "n1", want: "agentID longer than 253 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			md := metadata.Pairs(header.AgentID, tt.id)
			if tt.token != "" {
				md.Append(header.AuthenticationTokenContextKey, header.AuthenticationTokenContextSchemePrefix+tt.token)
			}
			if tt.idents != "" {
				md.Append(header.AgentIdentifiers, tt.idents)
			}
			got, err := ids.verify(metadata.NewIncomingContext(context.Background(), md))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "" && got != tt.id:
				t.Fatalf("identified as %q, want %q", got, tt.id)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRefusalsAreBoundedInTheLog: an agent refused over and over (a node
// may retry as fast as it likes) is refused every time, never reaches
// upstream's handler, and is logged at most at the limiter's rate; the
// rest are counted.
func TestRefusalsAreBoundedInTheLog(t *testing.T) {
	ids := newNodeIdentity(fake.NewClientset(), "kube-system", "konnectivity-agent", "system:konnectivity-server")
	ss := stream{ctx: metadata.NewIncomingContext(context.Background(), metadata.Pairs(header.AgentID, "n1"))}
	info := &grpc.StreamServerInfo{FullMethod: "/AgentService/Connect"}
	handler := func(any, grpc.ServerStream) error {
		t.Fatal("a refused agent reached the handler")
		return nil
	}
	const tries = 100
	for range tries {
		if err := ids.intercept(nil, ss, info, handler); status.Code(err) != codes.PermissionDenied {
			t.Fatalf("a tokenless agent: %v, want PermissionDenied", err)
		}
	}
	if n := ids.suppressed.Load(); n < tries-20 {
		t.Errorf("%d of %d refusals in a burst were left out of the log, want all but the limiter's burst", n, tries)
	}
}

// stream is a server stream with only a context.
type stream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s stream) Context() context.Context { return s.ctx }
