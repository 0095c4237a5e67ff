package runtime

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

type queueClock struct{ t time.Time }

func (c *queueClock) now() time.Time { return c.t }

func cp(name string) ControlPlaneRef {
	return ControlPlaneRef{Namespace: "clusters-" + name, Name: name}
}

// TestStartQueueAdmitsInOrder: two slots, five control planes: the first
// two to ask start, the others wait with their positions by creation time
// whatever order they ask in, and each slot freed goes to the oldest
// waiter, who is woken.
func TestStartQueueAdmitsInOrder(t *testing.T) {
	clock := &queueClock{t: time.Unix(1000, 0)}
	var woken []string
	q := &StartQueue{Slots: 2, Now: clock.now, Admitted: func(ref ControlPlaneRef) { woken = append(woken, ref.Name) }}
	created := map[string]time.Time{}
	names := []string{"a", "b", "c", "d", "e"}
	for i, n := range names {
		created[n] = time.Unix(int64(i), 0)
	}
	admitted := map[string]bool{}
	places := map[string]QueuePlace{}
	// a and b take the free slots; the others ask newest first.
	for _, n := range []string{"a", "b", "e", "d", "c"} {
		ok, place := q.Admit(cp(n), created[n])
		admitted[n], places[n] = ok, place
	}
	for _, n := range []string{"e", "d", "c"} {
		_, places[n] = q.Admit(cp(n), created[n])
	}
	if got := q.Holding(); got != 2 {
		t.Fatalf("holding %d slots, want 2", got)
	}
	for n, want := range map[string]int{"c": 1, "d": 2, "e": 3} {
		if admitted[n] || places[n].Position != want || places[n].Length != 3 {
			t.Errorf("%s: admitted %v at %+v, want waiting at %d of 3", n, admitted[n], places[n], want)
		}
	}
	if !admitted["a"] || !admitted["b"] {
		t.Errorf("a and b not both admitted: %v", admitted)
	}
	// Asking again keeps a slot.
	if ok, _ := q.Admit(cp("a"), created["a"]); !ok {
		t.Error("a lost its slot by asking again")
	}

	woken = nil
	q.Started(cp("a"))
	if !slices.Equal(woken, []string{"c"}) {
		t.Errorf("a started: woke %v, want [c]", woken)
	}
	if ok, _ := q.Admit(cp("d"), created["d"]); ok {
		t.Error("d admitted ahead of c")
	}
	if ok, _ := q.Admit(cp("c"), created["c"]); !ok {
		t.Error("c not admitted to the freed slot")
	}
	if _, place := q.Admit(cp("e"), created["e"]); place.Position != 2 || place.Length != 2 {
		t.Errorf("e at %+v, want 2 of 2", place)
	}
}

// TestStartQueueReleases: a slot comes back when its control plane is
// forgotten (deleted, hibernated) or holds it past the timeout; a waiter
// that stopped asking leaves the line.
func TestStartQueueReleases(t *testing.T) {
	clock := &queueClock{t: time.Unix(1000, 0)}
	q := &StartQueue{Slots: 1, Timeout: time.Minute, Now: clock.now}
	order := func(i int) time.Time { return time.Unix(int64(i), 0) }
	if ok, _ := q.Admit(cp("a"), order(0)); !ok {
		t.Fatal("a not admitted to a free queue")
	}
	if ok, place := q.Admit(cp("b"), order(1)); ok || place.Position != 1 {
		t.Fatalf("b admitted %v at %+v, want waiting first", ok, place)
	}
	q.Forget(cp("a"))
	if ok, _ := q.Admit(cp("b"), order(1)); !ok {
		t.Fatal("b not admitted after a was forgotten")
	}
	if ok, _ := q.Admit(cp("c"), order(2)); ok {
		t.Fatal("c admitted while b holds the only slot")
	}
	clock.t = clock.t.Add(time.Minute)
	if ok, _ := q.Admit(cp("c"), order(2)); !ok {
		t.Fatal("c not admitted after b held its slot past the timeout")
	}

	// d waits, then stops asking (deleted unseen): after a minute e, behind
	// it, is first in line.
	q.Admit(cp("d"), order(3))
	clock.t = clock.t.Add(30 * time.Second)
	q.Admit(cp("e"), order(4))
	clock.t = clock.t.Add(40 * time.Second) // c past its timeout, d unseen 70 s
	if ok, _ := q.Admit(cp("e"), order(4)); !ok {
		t.Error("e not admitted: d, which stopped asking, still ahead of it")
	}
}

// TestStartQueueManyConverge: 100 control planes with 2 slots, asking
// newest first; each one admitted starts and reports Started on its next
// look: all start, never more than 2 at once, and after the first two to
// ask (the slots were free) in order of creation.
func TestStartQueueManyConverge(t *testing.T) {
	q := &StartQueue{Slots: 2}
	type cluster struct {
		ref   ControlPlaneRef
		order time.Time
	}
	var all []cluster
	for i := range 100 {
		all = append(all, cluster{ref: cp(fmt.Sprintf("c%03d", i)), order: time.Unix(int64(i), 0)})
	}
	var startOrder []string
	running := map[string]bool{}
	for round := 0; len(startOrder) < len(all) && round < 1000; round++ {
		for _, c := range slices.Backward(all) {
			if running[c.ref.Name] {
				continue
			}
			if ok, _ := q.Admit(c.ref, c.order); ok {
				if q.Holding() > 2 {
					t.Fatalf("%d slots held, want at most 2", q.Holding())
				}
				running[c.ref.Name] = true
				startOrder = append(startOrder, c.ref.Name)
			}
		}
		for _, c := range all {
			if running[c.ref.Name] {
				q.Started(c.ref)
			}
		}
	}
	if len(startOrder) != len(all) {
		t.Fatalf("%d of %d started", len(startOrder), len(all))
	}
	// Two slots freed at once start two together, in either order.
	waves := slices.Clone(startOrder[2:])
	for i := 0; i+1 < len(waves); i += 2 {
		slices.Sort(waves[i : i+2])
	}
	if !slices.IsSorted(waves) {
		t.Errorf("started out of order: %v", startOrder[:10])
	}
}
