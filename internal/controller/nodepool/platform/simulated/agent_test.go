package simulated

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/runtime"
)

func TestAgentRef(t *testing.T) {
	np := &hypershiftv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "workers"}}
	ref := AgentRef(np)
	if ref != (runtime.ControlPlaneRef{Namespace: "team-a-workers", Name: "workers"}) {
		t.Fatalf("agentRef = %+v", ref)
	}
	key, ok := PoolOfAgent(ref)
	if !ok || key.Namespace != "team-a" || key.Name != "workers" {
		t.Errorf("PoolOfAgent(%+v) = %v %v", ref, key, ok)
	}
	if _, ok := PoolOfAgent(runtime.ControlPlaneRef{Namespace: "x", Name: "y"}); ok {
		t.Error("a ref not shaped NS-NAME mapped to a pool")
	}
}

func TestRenderAgent(t *testing.T) {
	spec := renderAgent("/data/nodes/clusters-workers/simulated-agent", "workers", []byte("kubeconfig"), 41234)
	if spec.Component != "simulated-agent" || spec.Readiness.Port != 41234 || spec.Readiness.Path != "/healthz" {
		t.Errorf("spec %+v", spec)
	}
	args := strings.Join(spec.Args, " ")
	for _, want := range []string{"--bootstrap-kubeconfig=/data/nodes/clusters-workers/simulated-agent/bootstrap.kubeconfig", "--cert-dir=/data/nodes/clusters-workers/simulated-agent/pki", "--nodepool=workers", "--health-address=127.0.0.1:41234"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if len(spec.Files) != 1 || !spec.Files[0].Secret {
		t.Errorf("the bootstrap kubeconfig must be a secret file: %+v", spec.Files)
	}
	// A new token is a new spec: the runtime restarts the agent with it.
	if spec.Hash() == renderAgent("/data/nodes/clusters-workers/simulated-agent", "workers", []byte("other"), 41234).Hash() {
		t.Error("a changed bootstrap kubeconfig does not change the spec hash")
	}
}
