package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
)

// sleepersResult is hibernated_300: N HostedClusters created hibernated
// (no process runs for them), then M of them woken at once.
type sleepersResult struct {
	status
	Clusters int `json:"clusters"`
	Awake    int `json:"awake"`
	// CreateCallsS is how long the N Create calls took; AllHibernatedS is
	// from the first call until every cluster reported Hibernated=True.
	CreateCallsS   float64 `json:"create_calls_s"`
	Hibernated     int     `json:"hibernated"`
	AllHibernatedS float64 `json:"all_hibernated_s"`
	// WakeAllS is from the M patches (spec.hibernation.enabled=false) until
	// all M are Available; 0 when they did not all get there. WakeS is each
	// woken cluster's time from the patches.
	AwakeAvailable int     `json:"awake_available"`
	WakeAllS       float64 `json:"wake_all_available_s"`
	WakeS          dist    `json:"wake_to_available_s"`
	StopReason     string  `json:"stop_reason"`
	// Memory: MemAvailable before the creates, with N hibernated, and at
	// the end with M awake; per hibernated cluster and per awake one.
	MemAvailableStartMiB      float64 `json:"mem_available_start_mib"`
	MemAvailableHibernatedMiB float64 `json:"mem_available_hibernated_mib"`
	MemAvailableEndMiB        float64 `json:"mem_available_end_mib"`
	MiBPerHibernated          float64 `json:"mib_per_hibernated_cluster"`
	MiBPerAwake               float64 `json:"mib_per_awake_cluster"`
	// ManagementRSSMiB: the management plane and operator with N clusters.
	ManagementRSSMiB float64 `json:"management_rss_mib"`
	// GetP50Ms, GetP99Ms: GET /version on every awake cluster, 5 each,
	// once all were Available.
	GetP50Ms float64 `json:"get_version_p50_ms"`
	GetP99Ms float64 `json:"get_version_p99_ms"`
	// CPU over 10 s at the end, in millicores.
	HostedCPU     float64 `json:"hosted_cpu_millicores"`
	ManagementCPU float64 `json:"management_cpu_millicores"`
	OperatorCPU   float64 `json:"operator_cpu_millicores"`
	// Management is GET of one HostedCluster every 250 ms over the phase.
	Management mgmtLatency `json:"management_api"`
}

func runSleepers(ctx context.Context, opts *options) *sleepersResult {
	res := &sleepersResult{Clusters: opts.scaled(300, 20), Awake: opts.scaled(60, 5)}
	p, err := startPlane(ctx, opts, opts.tmp+"-s")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	res.MemAvailableStartMiB = round1(memAvailableMiB())
	name := func(i int) string { return fmt.Sprintf("s%d", i+1) }

	start := time.Now()
	if err := createHibernated(ctx, p, res.Clusters, name); err != nil {
		res.Error, res.StopReason = err.Error(), "create failed"
		return res
	}
	res.CreateCallsS = round3(time.Since(start).Seconds())
	fmt.Printf("   %d Create calls (hibernated) took %.2fs\n", res.Clusters, res.CreateCallsS)
	probe := startMgmtProbe(ctx, p.client, name(0))
	defer func() { res.Management = probe.stop() }()

	res.Hibernated, err = waitCount(ctx, p, res.Clusters, time.Duration(opts.scaled(10, 3))*time.Minute, start, isHibernated, "Hibernated", nil)
	if err != nil {
		res.Error, res.StopReason = err.Error(), "waiting for Hibernated"
		return res
	}
	if res.Hibernated < res.Clusters {
		res.StopReason = fmt.Sprintf("only %d of %d Hibernated", res.Hibernated, res.Clusters)
		return res
	}
	res.AllHibernatedS = round3(time.Since(start).Seconds())
	res.MemAvailableHibernatedMiB = round1(memAvailableMiB())
	res.ManagementRSSMiB = round1(summedRSSMiB(p.dataDir+"/management/", p.dataDir+" "))
	res.MiBPerHibernated = round1((res.MemAvailableStartMiB - res.MemAvailableHibernatedMiB) / float64(res.Clusters))
	fmt.Printf("   all %d Hibernated after %.1fs; MemAvailable %.1f GiB; management plane + operator RSS %.0f MiB\n",
		res.Clusters, res.AllHibernatedS, res.MemAvailableHibernatedMiB/1024, res.ManagementRSSMiB)

	wakeStart := time.Now()
	errs := make([]error, res.Awake)
	var wg sync.WaitGroup
	for i := range res.Awake {
		wg.Go(func() { errs[i] = p.setHibernation(ctx, name(i), false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		res.Error, res.StopReason = err.Error(), "wake failed"
		return res
	}
	availableAt := map[string]float64{}
	res.AwakeAvailable, err = waitCount(ctx, p, res.Awake, time.Duration(opts.scaled(15, 5))*time.Minute, wakeStart, isAvailable, "Available", availableAt)
	if err != nil {
		res.Error, res.StopReason = err.Error(), "waiting for Available"
	}
	var times []float64
	for _, t := range availableAt {
		times = append(times, t)
	}
	res.WakeS = distOf(times)
	if res.AwakeAvailable < res.Awake {
		if res.StopReason == "" {
			res.StopReason = fmt.Sprintf("%d of %d woken clusters Available", res.AwakeAvailable, res.Awake)
		}
		return res
	}
	res.WakeAllS = round3(maxValue(availableAt))
	res.StopReason = fmt.Sprintf("all %d Hibernated, then %d woken Available", res.Clusters, res.Awake)
	fmt.Printf("   %d woken clusters Available after %.1fs (p50 %.1fs)\n", res.Awake, res.WakeAllS, res.WakeS.P50)

	var lat []float64
	for i := range res.Awake {
		cfg, err := p.hostedRESTConfig(ctx, name(i))
		if err != nil {
			res.Error = err.Error()
			return res
		}
		l, err := getVersionLatencies(ctx, cfg, 5)
		if err != nil {
			res.Error = fmt.Sprintf("GET /version on %s: %v", name(i), err)
			return res
		}
		lat = append(lat, l...)
	}
	res.GetP50Ms, res.GetP99Ms = round1(median(lat)), round1(percentile(lat, 99))
	if fps, err := measureFootprints(ctx, []string{p.dataDir + "/clusters/", p.dataDir + "/management/", p.dataDir + " "}, cpuWindow); err == nil {
		res.HostedCPU, res.ManagementCPU, res.OperatorCPU = round1(fps[0].cpuMillicores), round1(fps[1].cpuMillicores), round1(fps[2].cpuMillicores)
	}
	res.MemAvailableEndMiB = round1(memAvailableMiB())
	res.MiBPerAwake = round1((res.MemAvailableHibernatedMiB - res.MemAvailableEndMiB) / float64(res.Awake))
	fmt.Printf("   GET /version p50 %.1f ms, p99 %.1f ms; CPU hosted %.0f m, management %.0f m, operator %.0f m; MemAvailable drop per awake cluster %.0f MiB\n",
		res.GetP50Ms, res.GetP99Ms, res.HostedCPU, res.ManagementCPU, res.OperatorCPU, res.MiBPerAwake)
	return res
}

// createHibernated creates n clusters with spec.hibernation.enabled, 25
// calls at a time.
func createHibernated(ctx context.Context, p *plane, n int, name func(int) string) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 25 {
		wg.Go(func() {
			for i := range next {
				hc := hostedCluster(name(i))
				hc.Spec.Hibernation = &hypershiftv1alpha1.HibernationSpec{Enabled: true}
				errs[i] = p.createCluster(ctx, hc)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func isHibernated(hc *hypershiftv1alpha1.HostedCluster) bool {
	c := meta.FindStatusCondition(hc.Status.Conditions, hypershiftv1alpha1.Hibernated.String())
	return c != nil && c.Status == metav1.ConditionTrue
}

// waitCount lists the HostedClusters every second until want of them pass
// ok, the timeout, or MemAvailable under the floor (then this data dir's
// processes are killed by pid). at, when not nil, records when each was
// first seen passing, in seconds from since. It returns how many passed.
func waitCount(ctx context.Context, p *plane, want int, timeout time.Duration, since time.Time,
	ok func(*hypershiftv1alpha1.HostedCluster) bool, what string, at map[string]float64,
) (int, error) {
	if at == nil {
		at = map[string]float64{}
	}
	deadline := time.Now().Add(timeout)
	lastPrint := time.Now()
	for {
		list := &hypershiftv1alpha1.HostedClusterList{}
		if err := p.client.List(ctx, list, client.InNamespace(clusterNamespace)); err != nil && ctx.Err() == nil {
			fmt.Printf("   list hosted clusters: %v (retrying)\n", err)
		}
		now := time.Since(since).Seconds()
		for i := range list.Items {
			if hc := &list.Items[i]; ok(hc) {
				if _, seen := at[hc.Name]; !seen {
					at[hc.Name] = now
				}
			}
		}
		if len(at) >= want {
			return len(at), nil
		}
		if mem := memAvailableMiB(); mem < minMemAvailableMiB {
			killUnder(p.dataDir)
			return len(at), fmt.Errorf("aborted: MemAvailable %.0f MiB < %d MiB", mem, minMemAvailableMiB)
		}
		if time.Now().After(deadline) {
			return len(at), nil
		}
		if time.Since(lastPrint) >= 10*time.Second {
			lastPrint = time.Now()
			fmt.Printf("   [%4.0fs] %d/%d %s; MemAvailable %.1f GiB\n", now, len(at), want, what, memAvailableMiB()/1024)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return len(at), err
		}
	}
}
