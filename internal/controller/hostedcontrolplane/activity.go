package hostedcontrolplane

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// activityPoll is how often the endpoint proxies of idle-hibernating
// control planes are read: a held connection wakes its control plane
// within about this much plus a pass of each controller.
const activityPoll = 250 * time.Millisecond

// activityWatcher reads the endpoint proxies of control planes that sleep
// when idle, and enqueues a control plane when what its proxy saw should
// change the decision: a request while it sleeps (a wake request), or,
// while it runs, activity newer than status.activity by a tenth of
// idleAfter (so the HostedCluster controller never puts it to sleep more
// than that early) — not every byte, which would write status for ever on
// a busy cluster.
type activityWatcher struct {
	enqueue func(types.NamespacedName)

	mu      sync.Mutex
	watched map[types.NamespacedName]watchedProxy
}

type watchedProxy struct {
	url       string
	asleep    bool
	recorded  time.Time
	tolerance time.Duration
}

func newActivityWatcher(enqueue func(types.NamespacedName)) *activityWatcher {
	return &activityWatcher{enqueue: enqueue, watched: map[types.NamespacedName]watchedProxy{}}
}

// activity is the watcher, made on first use.
func (r *Reconciler) activity() *activityWatcher {
	r.activityOnce.Do(func() {
		r.activityWatch = newActivityWatcher(r.hostedClusters().enqueue)
	})
	return r.activityWatch
}

// watch records what the last pass reported of a control plane.
func (w *activityWatcher) watch(key types.NamespacedName, url string, hcp *hypershiftv1alpha1.HostedControlPlane) {
	p := watchedProxy{url: url, asleep: hibernated(hcp), tolerance: time.Second}
	if d := hcp.Spec.Hibernation.IdleAfter.Duration / 10; d > p.tolerance {
		p.tolerance = d
	}
	if a := hcp.Status.Activity; a != nil && a.LastActivityTime != nil {
		p.recorded = a.LastActivityTime.Time
	}
	w.mu.Lock()
	w.watched[key] = p
	w.mu.Unlock()
}

func (w *activityWatcher) forget(key types.NamespacedName) {
	w.mu.Lock()
	delete(w.watched, key)
	w.mu.Unlock()
}

// Start polls until ctx ends (a manager.Runnable).
func (w *activityWatcher) Start(ctx context.Context) error {
	t := time.NewTicker(activityPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		w.mu.Lock()
		snapshot := make(map[types.NamespacedName]watchedProxy, len(w.watched))
		for k, v := range w.watched {
			snapshot[k] = v
		}
		w.mu.Unlock()
		var wg sync.WaitGroup
		for key, p := range snapshot {
			if p.url == "" {
				continue
			}
			wg.Go(func() {
				a, err := readActivity(ctx, p.url)
				if err != nil {
					return
				}
				newer := a.LastActivity.Sub(p.recorded)
				if (p.asleep && (a.Waiting > 0 || newer > 0)) || (!p.asleep && newer >= p.tolerance) {
					w.enqueue(key)
				}
			})
		}
		wg.Wait()
	}
}
