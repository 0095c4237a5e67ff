package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hypershift.dev/internal/runtime"
	"hypershift.dev/internal/runtime/process"
	"hypershift.dev/internal/testenv"
)

// Control planes a/b-c and a-b/c both map to directory a-b-c. The first to
// claim it owns it; the other is refused everything, including Delete —
// also by a new runtime that supervises nothing yet (an operator restart),
// which would otherwise stop the owner's processes from their pid files.
func TestForeignOwnerDirIsNeitherUsedNorDeleted(t *testing.T) {
	root := testenv.ShortTempDir(t)
	ctx := context.Background()
	owner := runtime.ControlPlaneRef{Namespace: "a-b-c", Name: "b-c", Owner: "uid-of-a-b-c"}
	dir := filepath.Join(root, owner.Namespace)
	rt := newRuntime(t, root)
	t.Cleanup(func() { rt.Stop(context.Background(), owner) })
	if _, err := rt.Ports(ctx, owner, runtime.Named("client")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, process.OwnerFile)); err != nil || strings.TrimSpace(string(got)) != owner.Owner {
		t.Fatalf("owner marker %q (%v), want %q", got, err, owner.Owner)
	}
	spec := etcdSpec(t, dir)
	if err := rt.Apply(ctx, owner, []runtime.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "etcd running", running(rt, owner))
	pid := int(status(rt, owner).PID)

	intruders := []runtime.ControlPlaneRef{
		{Namespace: "a-b-c", Name: "c", Owner: "uid-of-a-b/c"},
		{Namespace: "a-b-c", Name: "b-c"}, // no owner at all
	}
	for _, intruder := range intruders {
		for i, r := range []*process.Runtime{rt, newRuntime(t, root)} {
			if _, err := r.Ports(ctx, intruder, runtime.Named("client")); !errors.Is(err, runtime.ErrNotOwner) {
				t.Errorf("runtime %d: Ports for %+v: %v, want ErrNotOwner", i, intruder, err)
			}
			err := r.Apply(ctx, intruder, []runtime.Spec{spec})
			if !errors.Is(err, runtime.ErrNotOwner) || !strings.Contains(err.Error(), owner.Owner) {
				t.Errorf("runtime %d: Apply for %+v: %v, want ErrNotOwner naming %s", i, intruder, err, owner.Owner)
			}
			if st := r.Status(intruder); len(st) != 0 {
				t.Errorf("runtime %d: %+v has instances %v", i, intruder, st)
			}
			if err := r.Delete(ctx, intruder); !errors.Is(err, runtime.ErrNotOwner) {
				t.Errorf("runtime %d: Delete for %+v: %v, want ErrNotOwner", i, intruder, err)
			}
		}
	}
	if !processAlive(pid) {
		t.Fatal("another owner's Delete stopped the owner's etcd")
	}
	if got := status(rt, owner).PID; int(got) != pid {
		t.Errorf("owner's etcd pid %d, want %d", got, pid)
	}
	if _, err := os.Stat(filepath.Join(dir, "etcd-0", "data")); err != nil {
		t.Errorf("owner's data: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, process.OwnerFile)); strings.TrimSpace(string(got)) != owner.Owner {
		t.Errorf("owner marker now %q", got)
	}

	// The owner itself deletes it.
	if err := rt.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Error("etcd still running after its owner's Delete")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory still present after its owner's Delete: %v", err)
	}
}

// A directory made before owner markers is claimed by the first owner that
// uses it (the upgrade path); a ref without an owner leaves it unmarked.
func TestUnmarkedDirIsClaimedByFirstOwner(t *testing.T) {
	root := testenv.ShortTempDir(t)
	ctx := context.Background()
	rt := newRuntime(t, root)
	legacy := filepath.Join(root, "clusters-old")
	if err := os.MkdirAll(legacy, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Ports(ctx, runtime.ControlPlaneRef{Namespace: "clusters-old", Name: "old"}, runtime.Named("p")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(legacy, process.OwnerFile)); !os.IsNotExist(err) {
		t.Errorf("a ref without an owner marked the directory: %v", err)
	}
	first := runtime.ControlPlaneRef{Namespace: "clusters-old", Name: "old", Owner: "uid-1"}
	if _, err := rt.Ports(ctx, first, runtime.Named("p")); err != nil {
		t.Fatal(err)
	}
	second := runtime.ControlPlaneRef{Namespace: "clusters-old", Name: "old", Owner: "uid-2"}
	if _, err := rt.Ports(ctx, second, runtime.Named("p")); !errors.Is(err, runtime.ErrNotOwner) {
		t.Errorf("second owner: %v, want ErrNotOwner", err)
	}
}
