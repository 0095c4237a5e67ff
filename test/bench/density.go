package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
)

// Stop criteria shared by density and burst.
const (
	minMemAvailableMiB = 2048
	maxGetP50          = time.Second
	getSamples         = 20
)

// densityBudget bounds the phase: once the CPU is saturated each create
// takes minutes, and the run must end (and clean up) in reasonable time.
func densityBudget(opts *options) time.Duration {
	return time.Duration(opts.scaled(20, 10)) * time.Minute
}

// densityResult: clusters brought up one after another until the target or
// a stop criterion.
type densityResult struct {
	status
	Target     int    `json:"target"`
	Reached    int    `json:"reached"`
	StopReason string `json:"stop_reason"`
	// TotalRSSMiB counts every process of the data dir: hosted control
	// planes, management plane and operator. HostedRSSMiB only the former.
	TotalRSSMiB        float64 `json:"total_rss_mib"`
	HostedRSSMiB       float64 `json:"hosted_rss_mib"`
	MemAvailableEndMiB float64 `json:"mem_available_end_mib"`
	// MarginalMiB is what one more idle control plane really costs: the
	// drop of MemAvailable from before the first create to the last step,
	// per control plane (page cache the kernel can drop does not count;
	// the binary's shared pages count once). HostedPSSMiB is the summed
	// proportional set size of the hosted processes at the end, per control
	// plane; HostedRSSPerMiB the summed RSS per control plane beside it.
	MemAvailableStartMiB float64 `json:"mem_available_start_mib"`
	MarginalMiB          float64 `json:"marginal_mib_per_control_plane"`
	HostedPSSMiB         float64 `json:"hosted_pss_mib_per_control_plane"`
	HostedRSSPerMiB      float64 `json:"hosted_rss_mib_per_control_plane"`
	// GetP50Ms is the last step's p50 of GET /version on the newest cluster.
	GetP50Ms float64 `json:"get_version_p50_ms"`
	// CPU at the end, over a 10 s window, in millicores: all hosted
	// control planes, the management plane's components, the operator.
	HostedCPU     float64       `json:"hosted_cpu_millicores"`
	ManagementCPU float64       `json:"management_cpu_millicores"`
	OperatorCPU   float64       `json:"operator_cpu_millicores"`
	CreateS       dist          `json:"create_to_available_s"`
	Steps         []densityStep `json:"steps"`
}

type densityStep struct {
	N               int     `json:"n"`
	CreateS         float64 `json:"create_s"`
	GetP50Ms        float64 `json:"get_version_p50_ms"`
	MemAvailableMiB float64 `json:"mem_available_mib"`
	HostedRSSMiB    float64 `json:"hosted_rss_mib"`
}

func runDensity(ctx context.Context, opts *options) *densityResult {
	res := &densityResult{Target: opts.scaled(60, 5)}
	p, err := startPlane(ctx, opts, opts.tmp+"-d")
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer p.stop()
	var creates []float64
	res.MemAvailableStartMiB = round1(memAvailableMiB())
	deadline := time.Now().Add(densityBudget(opts))
	for i := 1; i <= res.Target; i++ {
		if ctx.Err() != nil {
			res.StopReason = "interrupted"
			break
		}
		if time.Now().After(deadline) {
			res.StopReason = fmt.Sprintf("time budget of %s used up", densityBudget(opts))
			break
		}
		if avail := memAvailableMiB(); avail < minMemAvailableMiB {
			res.StopReason = fmt.Sprintf("MemAvailable %.0f MiB < %d MiB", avail, minMemAvailableMiB)
			break
		}
		name := fmt.Sprintf("d%d", i)
		start := time.Now()
		if err := p.create(ctx, name); err != nil {
			res.Error, res.StopReason = err.Error(), "create failed"
			break
		}
		if err := p.waitAvailable(ctx, name, 5*time.Minute, nil); err != nil {
			res.StopReason = err.Error()
			break
		}
		step := densityStep{N: i, CreateS: round3(time.Since(start).Seconds())}
		cfg, err := p.hostedRESTConfig(ctx, name)
		if err != nil {
			res.Error, res.StopReason = err.Error(), "no hosted kubeconfig"
			break
		}
		lat, err := getVersionLatencies(ctx, cfg, getSamples)
		if err != nil {
			res.StopReason = fmt.Sprintf("GET /version on %s failed: %v", name, err)
			break
		}
		step.GetP50Ms = round1(median(lat))
		step.MemAvailableMiB = round1(memAvailableMiB())
		step.HostedRSSMiB = round1(summedRSSMiB(p.dataDir + "/clusters/"))
		res.Steps = append(res.Steps, step)
		res.Reached = i
		creates = append(creates, step.CreateS)
		fmt.Printf("   %-4s Available in %5.2fs; GET /version p50 %6.1f ms; MemAvailable %5.1f GiB; hosted RSS %5.1f GiB\n",
			name, step.CreateS, step.GetP50Ms, step.MemAvailableMiB/1024, step.HostedRSSMiB/1024)
		if step.GetP50Ms > float64(maxGetP50.Milliseconds()) {
			res.StopReason = fmt.Sprintf("GET /version p50 %.0f ms > %s", step.GetP50Ms, maxGetP50)
			break
		}
	}
	if res.StopReason == "" {
		res.StopReason = "reached the target"
	}
	res.CreateS = distOf(creates)
	if res.Reached > 0 && ctx.Err() == nil {
		fps, err := measureFootprints(ctx, []string{p.dataDir + "/clusters/", p.dataDir + "/management/", p.dataDir + " "}, cpuWindow)
		if err == nil {
			res.HostedCPU, res.ManagementCPU, res.OperatorCPU = round1(fps[0].cpuMillicores), round1(fps[1].cpuMillicores), round1(fps[2].cpuMillicores)
			fmt.Printf("   CPU over %s at the end: hosted %.0f, management plane %.0f, operator %.0f millicores\n",
				cpuWindow, res.HostedCPU, res.ManagementCPU, res.OperatorCPU)
		}
	}
	res.TotalRSSMiB = round1(summedRSSMiB(p.dataDir+"/", p.dataDir+" "))
	res.HostedRSSMiB = round1(summedRSSMiB(p.dataDir + "/clusters/"))
	res.MemAvailableEndMiB = round1(memAvailableMiB())
	if n := len(res.Steps); n > 0 {
		last := res.Steps[n-1]
		res.GetP50Ms = last.GetP50Ms
		res.MarginalMiB = round1((res.MemAvailableStartMiB - last.MemAvailableMiB) / float64(last.N))
		res.HostedPSSMiB = round1(summedPSSMiB(p.dataDir+"/clusters/") / float64(last.N))
		res.HostedRSSPerMiB = round1(res.HostedRSSMiB / float64(last.N))
		fmt.Printf("   per control plane: MemAvailable drop %.0f MiB, PSS %.0f MiB, summed RSS %.0f MiB\n",
			res.MarginalMiB, res.HostedPSSMiB, res.HostedRSSPerMiB)
	}
	fmt.Printf("   stopped: %s\n", res.StopReason)
	return res
}

// getVersionLatencies GETs /version n times over one kept-alive connection
// and returns each latency in milliseconds.
func getVersionLatencies(ctx context.Context, cfg *rest.Config, n int) ([]float64, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	defer hc.CloseIdleConnections()
	hc.Timeout = 10 * time.Second
	out := make([]float64, 0, n)
	for range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
		if err != nil {
			return nil, err
		}
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET /version: %s", resp.Status)
		}
		out = append(out, float64(time.Since(start).Microseconds())/1000)
	}
	return out, nil
}
