package simulated

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/controller/nodepool/platform"
	"hypershift.dev/internal/nodes/bootstrap"
	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// Pools a/b-c and a-b/c both map to agent directory a-b-c. The pool that
// claimed it keeps it: the other pool neither runs its agent there nor
// removes it when deleted (and its deletion still completes).
func TestAgentDirOfAnotherPoolIsNeitherUsedNorDeleted(t *testing.T) {
	ctx := context.Background()
	root := testenv.ShortTempDir(t)
	rt, err := process.New(process.Options{Root: root, Binary: "/nonexistent/hypershift", Log: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	first := &hypershiftv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b-c", UID: types.UID("uid-of-a-b-c")}}
	second := &hypershiftv1alpha1.NodePool{ObjectMeta: metav1.ObjectMeta{Namespace: "a-b", Name: "c", UID: types.UID("uid-of-a-b-slash-c")}}
	if AgentRef(first).Namespace != AgentRef(second).Namespace {
		t.Fatalf("test premise: %+v and %+v should share a directory", AgentRef(first), AgentRef(second))
	}
	if _, err := rt.Ports(ctx, AgentRef(first), runtime.Named(AgentHealthPort)); err != nil {
		t.Fatal(err)
	}
	dir := rt.Dir(AgentRef(first))
	data := filepath.Join(dir, "simulated-agent", "pki", "kubelet.key")
	if err := os.MkdirAll(filepath.Dir(data), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte("first pool's key"), 0o600); err != nil {
		t.Fatal(err)
	}

	p := &Platform{Runtime: rt}
	s := &platform.Pool{
		NodePool: second, Log: testenv.Logger(), Cluster: &platform.Cluster{Ensured: &sync.Map{}},
		Server: "https://127.0.0.1:1", CAPEM: []byte("ca"), Token: bootstrap.Token{ID: "abcdef", Secret: "0123456789abcdef"},
	}
	s.Cluster.Ensured.Store(second.Name, true)
	_, err = p.ensureAgent(ctx, s)
	if !errors.Is(err, runtime.ErrNotOwner) || !strings.Contains(err.Error(), string(first.UID)) {
		t.Errorf("ensureAgent for the second pool: %v, want ErrNotOwner naming %s", err, first.UID)
	}
	if st := rt.Status(AgentRef(second)); len(st) != 0 {
		t.Errorf("an agent runs for the second pool: %v", st)
	}
	if err := p.Delete(ctx, s); err != nil {
		t.Errorf("deleting the second pool: %v (its finalizer must complete)", err)
	}
	if got, err := os.ReadFile(data); err != nil || string(got) != "first pool's key" {
		t.Errorf("first pool's agent data after deleting the second pool: %q, %v", got, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, process.OwnerFile)); strings.TrimSpace(string(got)) != string(first.UID) {
		t.Errorf("owner marker %q, want %s", got, first.UID)
	}

	// The owning pool's deletion removes it.
	if err := p.Delete(ctx, &platform.Pool{NodePool: first, Log: testenv.Logger()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("agent directory still present after its pool's deletion: %v", err)
	}
}
