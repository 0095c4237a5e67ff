package join

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// startingCRI refuses to remove a sandbox while its container is "starting"
// for the first refusals calls, as containerd does right after a kubelet
// stopped in the middle of a container's start.
type startingCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu       sync.Mutex
	refusals int
	removed  []string
}

func (c *startingCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{{
		Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "kube-system", Name: "agent"},
	}}}, nil
}

func (c *startingCRI) StopPodSandbox(context.Context, *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (c *startingCRI) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusals > 0 {
		c.refusals--
		return nil, errors.New(`failed to set removing state for container "c1": container is in starting state, can't be removed`)
	}
	c.removed = append(c.removed, req.PodSandboxId)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func serveCRI(t *testing.T, cri runtimeapi.RuntimeServiceServer) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "cri.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(s, cri)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return socket
}

func TestRemovePodsWaitsForAStartingContainer(t *testing.T) {
	fastRetries(t)
	cri := &startingCRI{refusals: 3}
	if err := removePods(context.Background(), serveCRI(t, cri)); err != nil {
		t.Fatalf("removePods: %v", err)
	}
	if len(cri.removed) != 1 || cri.removed[0] != "sb1" {
		t.Fatalf("removed %v, want [sb1]", cri.removed)
	}
}

func TestRemovePodsGivesUpNamingThePod(t *testing.T) {
	fastRetries(t)
	cri := &startingCRI{refusals: removePodAttempts}
	err := removePods(context.Background(), serveCRI(t, cri))
	if err == nil {
		t.Fatal("removePods succeeded although every removal was refused")
	}
	want := "pod kube-system/agent: remove: "
	if got := err.Error(); len(got) < len(want) || got[:len(want)] != want {
		t.Fatalf("error %q does not start with %q", got, want)
	}
	if len(cri.removed) != 0 {
		t.Fatalf("removed %v", cri.removed)
	}
}

func fastRetries(t *testing.T) {
	interval := removePodInterval
	removePodInterval = 10 * time.Millisecond
	t.Cleanup(func() { removePodInterval = interval })
}
