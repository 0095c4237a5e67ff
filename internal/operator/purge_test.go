package operator

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"hypershift.dev/internal/datadir"
	"hypershift.dev/internal/nodes/machine"
)

// `down --purge` deletes the machines its plane made (their owner begins
// with the data dir's identity) before the data dir, which alone says which
// they are; another plane's machine, one made by hand and one whose owner
// only looks like its identity are left alone.
func TestPurgeDeletesOnlyItsPlanesMachines(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: machines need root (namespaces, mounts, links); run the tests as root")
	}
	layout := datadir.Layout{Root: filepath.Join(t.TempDir(), "data")}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	h := machine.Host{Dir: filepath.Join(t.TempDir(), "machines")}
	b := make([]byte, 1)
	_, _ = rand.Read(b)
	if _, err := h.EnsureNetwork(fmt.Sprintf("10.214.%d.%d/28", b[0], 16*(int(b[0])%16))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		left, _ := h.List()
		for _, r := range left {
			if err := h.Delete(context.Background(), r.Name, nil); err != nil {
				t.Errorf("delete machine %s: %v", r.Name, err)
			}
		}
		if err := h.DeleteNetwork(); err != nil {
			t.Errorf("delete the network: %v", err)
		}
	})
	ours, err := layout.EnsureMachines(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := datadir.Layout{Root: t.TempDir()}.EnsureMachines(h.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := layout.EnsureMachines(h.Dir); err != nil || again.ID != ours.ID {
		t.Fatalf("the data dir's identity changed: %q, then %q (%v)", ours.ID, again.ID, err)
	}
	for name, owner := range map[string]string{
		"ours":      ours.OwnerPrefix() + "uid-1",
		"theirs":    other.OwnerPrefix() + "uid-2",
		"byhand":    "",
		"lookalike": ours.ID + "uid-3",
	} {
		if _, err := h.Make(name, owner); err != nil {
			t.Fatalf("make machine %s: %v", name, err)
		}
	}
	if err := Down(layout, true, func(int) {}); err != nil {
		t.Fatalf("down --purge: %v", err)
	}
	left, err := h.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range left {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	if want := []string{"byhand", "lookalike", "theirs"}; !slices.Equal(names, want) {
		t.Errorf("machines after down --purge: %v, want %v", names, want)
	}
	if _, err := os.Stat(layout.Root); !os.IsNotExist(err) {
		t.Errorf("the data dir is still there: %v", err)
	}
}
