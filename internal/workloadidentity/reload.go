package workloadidentity

import (
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
)

// reloading is a value loaded from files and loaded again when one of them
// changes size or modification time. The files are checked at each get —
// at each TLS handshake for the serving certificate and the client CA
// bundle, as endpointproxy's reloadingPool checks its CA bundle: a stat per
// file, no watcher goroutine, and a renewed file applies from the next
// connection on without a restart. A load that fails (a renewal written
// half-way: new certificate, old key; a bundle cut short) keeps the last
// good value, and is not tried (or logged) again until a file changes.
type reloading[T any] struct {
	files []string
	// what names the value in errors and logs, with its files.
	what string
	load func() (T, error)
	log  logr.Logger

	mu     sync.Mutex
	loaded bool
	value  T
	// seen are the stamps of the files value was loaded from; failed those
	// of the files a load last failed on.
	seen, failed []fileStamp
}

// fileStamp is what says a file changed. A file that cannot be stat'ed
// (removed) has the zero stamp: a change like any other.
type fileStamp struct {
	size    int64
	modTime time.Time
}

func stamp(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: info.Size(), modTime: info.ModTime()}
}

func sameStamps(a, b []fileStamp) bool {
	return slices.EqualFunc(a, b, func(f, g fileStamp) bool { return f.size == g.size && f.modTime.Equal(g.modTime) })
}

// get is the value of the files as they are, or the last good one when
// they do not load; an error only when they never loaded.
func (r *reloading[T]) get() (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Stamped before loading: a file written between the two is loaded
	// again at the next get, never missed.
	now := make([]fileStamp, len(r.files))
	for i, f := range r.files {
		now[i] = stamp(f)
	}
	if r.loaded && (sameStamps(now, r.seen) || sameStamps(now, r.failed)) {
		return r.value, nil
	}
	v, err := r.load()
	if err == nil {
		r.value, r.loaded, r.seen, r.failed = v, true, now, nil
		return v, nil
	}
	if !r.loaded {
		var zero T
		return zero, fmt.Errorf("%s: %w", r.what, err)
	}
	r.failed = now
	r.log.Error(err, "not reloaded: using the last good one", "what", r.what)
	return r.value, nil
}
