package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// mgmtProbe GETs one HostedCluster from the management API every 250 ms
// while a phase runs, for the "management API p99 < 1 s throughout"
// target. A GET that fails or takes over 10 s counts as a failure.
type mgmtProbe struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	latencies []float64 // milliseconds
	failures  int
}

// mgmtLatency is what the probe saw.
type mgmtLatency struct {
	N        int     `json:"n"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	Failures int     `json:"failures"`
}

func startMgmtProbe(ctx context.Context, c client.Client, name string) *mgmtProbe {
	ctx, cancel := context.WithCancel(ctx)
	m := &mgmtProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		key := client.ObjectKey{Namespace: clusterNamespace, Name: name}
		for {
			reqCtx, cancelReq := context.WithTimeout(ctx, 10*time.Second)
			start := time.Now()
			err := c.Get(reqCtx, key, &hypershiftv1alpha1.HostedCluster{})
			cancelReq()
			if ctx.Err() != nil {
				return
			}
			m.mu.Lock()
			if err != nil {
				m.failures++
			} else {
				m.latencies = append(m.latencies, float64(time.Since(start).Microseconds())/1000)
			}
			m.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

func (l mgmtLatency) String() string {
	return fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.0f ms, %d failed of %d", l.P50Ms, l.P99Ms, l.MaxMs, l.Failures, l.N+l.Failures)
}

// ok is the target: p99 under a second, nothing failed.
func (l mgmtLatency) ok() bool { return l.N > 0 && l.P99Ms < 1000 && l.Failures == 0 }

// stop ends the probe and summarizes it.
func (m *mgmtProbe) stop() mgmtLatency {
	m.cancel()
	<-m.done
	m.mu.Lock()
	defer m.mu.Unlock()
	out := mgmtLatency{N: len(m.latencies), Failures: m.failures}
	if len(m.latencies) > 0 {
		out.P50Ms = round1(median(m.latencies))
		out.P99Ms = round1(percentile(m.latencies, 99))
		out.MaxMs = round1(percentile(m.latencies, 100))
	}
	return out
}
