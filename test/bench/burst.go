package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// burstResult is burst_100: N HostedClusters created at once.
type burstResult struct {
	status
	Clusters int `json:"clusters"`
	// AllAvailableS is from the first Create call until every cluster is
	// Available; 0 when they did not all get there.
	AllAvailableS float64 `json:"all_available_s"`
	Available     int     `json:"available"`
	StopReason    string  `json:"stop_reason"`
	// CreateCallsS is how long the N Create calls took together.
	CreateCallsS float64 `json:"create_calls_s"`
	// PeakRSSMiB is the peak summed RSS of the hosted control planes'
	// processes (sampled each second); PeakTotalRSSMiB adds the management
	// plane and operator.
	PeakRSSMiB         float64 `json:"peak_rss_mib"`
	PeakTotalRSSMiB    float64 `json:"peak_total_rss_mib"`
	MinMemAvailableMiB float64 `json:"min_mem_available_mib"`
	// CreateS is each Available cluster's time from the first Create call.
	CreateS dist `json:"create_to_available_s"`
	// Management is GET of one HostedCluster every 250 ms after the creates.
	Management mgmtLatency `json:"management_api"`
}

func runBurst(ctx context.Context, opts *options) *burstResult {
	res := &burstResult{Clusters: opts.scaled(100, 10)}
	timeout := time.Duration(opts.scaled(10, 5)) * time.Minute
	p, err := startPlane(ctx, opts, opts.tmp+"-b")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()

	start := time.Now()
	if err := createAll(ctx, p, res.Clusters); err != nil {
		res.Error, res.StopReason = err.Error(), "create failed"
		return res
	}
	res.CreateCallsS = round3(time.Since(start).Seconds())
	fmt.Printf("   %d Create calls took %.2fs\n", res.Clusters, res.CreateCallsS)
	probe := startMgmtProbe(ctx, p.client, "b1")

	availableAt := map[string]float64{}
	res.MinMemAvailableMiB = memAvailableMiB()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	lastSample, lastPrint := time.Time{}, time.Now()
	for len(availableAt) < res.Clusters {
		if mem := memAvailableMiB(); mem < res.MinMemAvailableMiB {
			res.MinMemAvailableMiB = mem
		}
		if res.MinMemAvailableMiB < minMemAvailableMiB {
			// Stop before the kernel's OOM killer picks victims, which may
			// not be ours: kill this data dir's processes by pid at once.
			res.StopReason = fmt.Sprintf("aborted: MemAvailable %.0f MiB < %d MiB after %.0fs", res.MinMemAvailableMiB, minMemAvailableMiB, time.Since(start).Seconds())
			killUnder(p.dataDir)
			break
		}
		if time.Since(lastSample) >= time.Second {
			lastSample = time.Now()
			hosted := summedRSSMiB(p.dataDir + "/clusters/")
			total := summedRSSMiB(p.dataDir+"/", p.dataDir+" ")
			res.PeakRSSMiB = max(res.PeakRSSMiB, hosted)
			res.PeakTotalRSSMiB = max(res.PeakTotalRSSMiB, total)
		}
		if err := markAvailable(ctx, p.client, start, availableAt); err != nil && ctx.Err() == nil {
			fmt.Printf("   list hosted clusters: %v (retrying)\n", err)
		}
		if time.Since(lastPrint) >= 10*time.Second {
			lastPrint = time.Now()
			fmt.Printf("   [%4.0fs] %d/%d Available; peak hosted RSS %.1f GiB; MemAvailable %.1f GiB\n",
				time.Since(start).Seconds(), len(availableAt), res.Clusters, res.PeakRSSMiB/1024, memAvailableMiB()/1024)
		}
		if time.Since(start) > timeout {
			res.StopReason = fmt.Sprintf("timeout: not all Available after %s", timeout)
			break
		}
		select {
		case <-ctx.Done():
			res.StopReason = "interrupted"
		case <-tick.C:
		}
		if ctx.Err() != nil {
			break
		}
	}
	res.Management = probe.stop()
	res.Available = len(availableAt)
	if res.Available == res.Clusters {
		res.StopReason = "all Available"
		res.AllAvailableS = round3(maxValue(availableAt))
	}
	var times []float64
	for _, t := range availableAt {
		times = append(times, t)
	}
	res.CreateS = distOf(times)
	res.PeakRSSMiB, res.PeakTotalRSSMiB = round1(res.PeakRSSMiB), round1(res.PeakTotalRSSMiB)
	res.MinMemAvailableMiB = round1(res.MinMemAvailableMiB)
	fmt.Printf("   %s: %d/%d Available; peak hosted RSS %.1f GiB; management API %s\n", res.StopReason, res.Available, res.Clusters, res.PeakRSSMiB/1024, res.Management)
	return res
}

// createAll issues the N Create calls concurrently.
func createAll(ctx context.Context, p *plane, n int) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = p.create(ctx, fmt.Sprintf("b%d", i+1)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// markAvailable records when each cluster was first seen Available.
func markAvailable(ctx context.Context, c client.Client, start time.Time, availableAt map[string]float64) error {
	list := &hypershiftv1alpha1.HostedClusterList{}
	if err := c.List(ctx, list, client.InNamespace(clusterNamespace)); err != nil {
		return err
	}
	now := time.Since(start).Seconds()
	for i := range list.Items {
		hc := &list.Items[i]
		if _, seen := availableAt[hc.Name]; !seen && isAvailable(hc) {
			availableAt[hc.Name] = now
		}
	}
	return nil
}

func maxValue(m map[string]float64) float64 {
	out := 0.0
	for _, v := range m {
		out = max(out, v)
	}
	return out
}
