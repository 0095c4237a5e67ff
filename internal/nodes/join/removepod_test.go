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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// goneCRI lists sandboxes that another party (a kubelet finishing a pod's
// deletion) removes before they can be stopped or removed here.
type goneCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	mu    sync.Mutex
	calls int
}

func (c *goneCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		{Id: "stopped-elsewhere", Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "default", Name: "a"}},
		{Id: "removed-elsewhere", Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "default", Name: "b"}},
	}}, nil
}

func (c *goneCRI) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if req.PodSandboxId == "stopped-elsewhere" {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", req.PodSandboxId)
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (c *goneCRI) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return nil, status.Errorf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", req.PodSandboxId)
}

// A sandbox gone between the list and the stop or removal is removed: no
// error, and no retry.
func TestRemovePodsCountsAVanishedSandboxAsRemoved(t *testing.T) {
	fastRetries(t)
	cri := &goneCRI{}
	if err := removePods(context.Background(), serveCRI(t, cri)); err != nil {
		t.Fatalf("removePods: %v", err)
	}
	if cri.calls != 3 {
		t.Fatalf("%d CRI calls, want 3 (one stop of each sandbox, one removal of the one that stopped)", cri.calls)
	}
}

func fastRetries(t *testing.T) {
	interval := removePodInterval
	removePodInterval = 10 * time.Millisecond
	t.Cleanup(func() { removePodInterval = interval })
}
