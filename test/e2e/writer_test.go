package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// writer creates config maps one after another and reads each back,
// through whichever client cs holds (a migration's test switches it to the
// target's endpoint).
type writer struct {
	cs atomic.Pointer[kubernetes.Clientset]
	// prefix names the config maps: PREFIX-0, PREFIX-1, … ("w" if empty).
	prefix string

	mu         sync.Mutex
	acked      []string
	failures   int
	failingAt  time.Time
	longestOut time.Duration
	// errs are the errors of the outage under way; outages are the
	// finished ones over a second, each with its time and errors.
	errs    []string
	outages []string
}

// newWriter is a writer through cs.
func newWriter(cs *kubernetes.Clientset) *writer {
	w := &writer{}
	w.cs.Store(cs)
	return w
}

func (w *writer) run(ctx context.Context) {
	prefix := w.prefix
	if prefix == "" {
		prefix = "w"
	}
	for i := 0; ctx.Err() == nil; {
		c := w.cs.Load()
		name := fmt.Sprintf("%s-%d", prefix, i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil // an earlier, unanswered attempt went through
		}
		if err == nil {
			_, err = c.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		}
		if ctx.Err() != nil {
			return
		}
		w.record(name, err)
		if err == nil {
			i++
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (w *writer) record(name string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if err != nil {
		w.failures++
		if w.failingAt.IsZero() {
			w.failingAt = now
		}
		w.errs = append(w.errs, fmt.Sprintf("%s %v", now.Format("15:04:05.000"), err))
		return
	}
	if !w.failingAt.IsZero() {
		out := now.Sub(w.failingAt)
		w.longestOut = max(w.longestOut, out)
		if out > time.Second {
			w.outages = append(w.outages, fmt.Sprintf("%.1fs until %s:\n  %s", out.Seconds(), now.Format("15:04:05.000"), strings.Join(w.errs, "\n  ")))
		}
		w.failingAt, w.errs = time.Time{}, nil
	}
	w.acked = append(w.acked, name)
}

// lastError is the newest error of the outage under way, if any.
func (w *writer) lastError() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) == 0 {
		return "none"
	}
	return w.errs[len(w.errs)-1]
}

func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *writer) result() (acked []string, failures int, longest time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	longest = w.longestOut
	if !w.failingAt.IsZero() {
		longest = max(longest, time.Since(w.failingAt))
	}
	return append([]string(nil), w.acked...), w.failures, longest
}

// verify checks what a client that retries saw while the writer ran (it is
// stopped): at least minAcked acknowledged writes, none of them lost (each
// is listed now), and no run of failed requests over 5 s.
func (w *writer) verify(t *testing.T, cs *kubernetes.Clientset, minAcked int) {
	t.Helper()
	if longest := w.verifyKept(t, cs, minAcked); longest > 5*time.Second {
		t.Errorf("requests failed for %.1fs in a row, want at most 5s", longest.Seconds())
	}
}

// verifyKept is verify without a bound on outages (a migration's downtime
// is one); it returns the longest.
func (w *writer) verifyKept(t *testing.T, cs *kubernetes.Clientset, minAcked int) time.Duration {
	t.Helper()
	acked, failures, longest := w.result()
	w.mu.Lock()
	for _, o := range w.outages {
		t.Logf("outage of %s", o)
	}
	if n := len(w.errs); n > 0 {
		// Unfinished: the first and last errors say what it is.
		errs := w.errs
		if n > 6 {
			errs = append(append(errs[:3:3], fmt.Sprintf("… %d more …", n-6)), errs[n-3:]...)
		}
		t.Logf("outage under way since %s:\n  %s", w.failingAt.Format("15:04:05.000"), strings.Join(errs, "\n  "))
	}
	w.mu.Unlock()
	t.Logf("%d acknowledged writes, %d failed requests, longest outage %.1fs", len(acked), failures, longest.Seconds())
	if len(acked) < minAcked {
		t.Fatalf("only %d writes acknowledged: the writer did not make progress", len(acked))
	}
	present := configMapNames(t, cs, "default")
	var lost []string
	for _, name := range acked {
		if !present[name] {
			lost = append(lost, name)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes lost: %v", len(lost), lost)
	}
	return longest
}

// start runs the writer until the returned stop is called.
func (w *writer) start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	return func() { cancel(); <-done }
}
