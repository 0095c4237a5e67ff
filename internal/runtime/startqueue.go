package runtime

import (
	"sort"
	"sync"
	"time"
)

// StartQueue admits the cold starts of control planes: at most Slots start
// at a time, the others wait in the order they arrived (their creation
// time). A start costs its API server several CPU-seconds of work that is
// the same for every cluster; a hundred of them at once on a few cores
// starve each other (and the management API) so that none finishes, where
// the same hundred in waves all do.
//
// A control plane holds its slot from its admission until Started (its API
// serves), Forget (deleted, hibernated) or Timeout, whichever comes first:
// a control plane that never gets ready must not hold the queue up.
type StartQueue struct {
	// Slots is how many control planes may start at once; at least 1.
	Slots int
	// Timeout is how long a slot is held at most; zero: DefaultStartTimeout.
	Timeout time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Admitted, when set, is called (outside the queue's lock) for each
	// waiting control plane a freed slot admits, so that it is started
	// without waiting for its next periodic look.
	Admitted func(ControlPlaneRef)

	mu      sync.Mutex
	holders map[string]time.Time // key → when admitted
	waiting map[string]*waiter
}

// DefaultStartTimeout is how long a start may hold its slot: a few times
// a start on a loaded machine.
const DefaultStartTimeout = 2 * time.Minute

// forgetWaiting is how long a waiter that stopped asking stays in line
// (its control plane was deleted while its controller was not looking).
const forgetWaiting = time.Minute

type waiter struct {
	ref      ControlPlaneRef
	order    time.Time // the control plane's creation: its place in line
	since    time.Time // first queued
	lastSeen time.Time
}

// QueuePlace is a waiting control plane's place: Position 1 is next.
type QueuePlace struct {
	Position, Length int
	Since            time.Time
}

func queueKey(ref ControlPlaneRef) string { return ref.Namespace + "/" + ref.Name }

// Admit asks for a slot for ref's cold start; order is its place in line
// (the control plane's creation time). It returns true when ref holds a
// slot (now or already), else where ref waits.
func (q *StartQueue) Admit(ref ControlPlaneRef, order time.Time) (bool, QueuePlace) {
	q.mu.Lock()
	admitted, place, notify := q.admit(ref, order)
	q.mu.Unlock()
	q.notify(notify)
	return admitted, place
}

func (q *StartQueue) admit(ref ControlPlaneRef, order time.Time) (bool, QueuePlace, []ControlPlaneRef) {
	if q.holders == nil {
		q.holders, q.waiting = map[string]time.Time{}, map[string]*waiter{}
	}
	now := q.now()
	notify := q.expire(now)
	key := queueKey(ref)
	if _, ok := q.holders[key]; ok {
		return true, QueuePlace{}, notify
	}
	w := q.waiting[key]
	if w == nil {
		w = &waiter{ref: ref, order: order, since: now}
		q.waiting[key] = w
	}
	w.lastSeen = now
	line := q.line()
	for i, o := range line {
		if o != w {
			continue
		}
		// Ahead of ref in line but not asking now would block it only
		// until it asks: a free slot goes to the first in line.
		if i < q.free() {
			delete(q.waiting, key)
			q.holders[key] = now
			return true, QueuePlace{}, notify
		}
		return false, QueuePlace{Position: i + 1 - q.free(), Length: len(line) - q.free(), Since: w.since}, notify
	}
	return false, QueuePlace{}, notify
}

// Started releases ref's slot: its API server serves.
func (q *StartQueue) Started(ref ControlPlaneRef) { q.release(ref) }

// Forget takes ref out of the queue and releases its slot: it was deleted
// or does not want to run (hibernated, fenced).
func (q *StartQueue) Forget(ref ControlPlaneRef) { q.release(ref) }

func (q *StartQueue) release(ref ControlPlaneRef) {
	q.mu.Lock()
	key := queueKey(ref)
	_, held := q.holders[key]
	delete(q.holders, key)
	delete(q.waiting, key)
	var notify []ControlPlaneRef
	if held {
		notify = q.next()
	}
	q.mu.Unlock()
	q.notify(notify)
}

// Holding is how many control planes hold a slot now.
func (q *StartQueue) Holding() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.holders)
}

// expire frees the slots held past the timeout and forgets the waiters
// that stopped asking; it returns the waiters to wake for the slots freed.
func (q *StartQueue) expire(now time.Time) []ControlPlaneRef {
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	freed := false
	for key, at := range q.holders {
		if now.Sub(at) >= timeout {
			delete(q.holders, key)
			freed = true
		}
	}
	for key, w := range q.waiting {
		if now.Sub(w.lastSeen) >= forgetWaiting {
			delete(q.waiting, key)
		}
	}
	if !freed {
		return nil
	}
	return q.next()
}

// next is the waiters the free slots will go to.
func (q *StartQueue) next() []ControlPlaneRef {
	line := q.line()
	var out []ControlPlaneRef
	for i := 0; i < q.free() && i < len(line); i++ {
		out = append(out, line[i].ref)
	}
	return out
}

// line is the waiters in order: creation time, then namespace and name.
func (q *StartQueue) line() []*waiter {
	line := make([]*waiter, 0, len(q.waiting))
	for _, w := range q.waiting {
		line = append(line, w)
	}
	sort.Slice(line, func(i, j int) bool {
		if !line[i].order.Equal(line[j].order) {
			return line[i].order.Before(line[j].order)
		}
		return queueKey(line[i].ref) < queueKey(line[j].ref)
	})
	return line
}

func (q *StartQueue) free() int {
	slots := max(q.Slots, 1)
	return max(slots-len(q.holders), 0)
}

func (q *StartQueue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

func (q *StartQueue) notify(refs []ControlPlaneRef) {
	if q.Admitted == nil {
		return
	}
	for _, ref := range refs {
		q.Admitted(ref)
	}
}
