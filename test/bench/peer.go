package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// peerResult is the same measurements for kwokctl's binary runtime running
// the same hypershift components: what a lean launcher with its own flags
// achieves on this machine.
type peerResult struct {
	status
	Tool string `json:"tool"`
	// CreateS is from starting `kwokctl create cluster` until the API
	// server's /readyz answers.
	CreateS dist `json:"create_s"`
	// KwokctlReturnP50 is when the kwokctl command itself returned.
	KwokctlReturnP50 float64       `json:"kwokctl_returned_s_p50"`
	RSS              memorySummary `json:"rss_mib"`
	IdleCPU          cpuSummary    `json:"idle_cpu_millicores"`
}

func runPeer(ctx context.Context, opts *options) *peerResult {
	res := &peerResult{}
	path, err := ensureKwokctl(ctx, opts.root)
	if err != nil {
		res.Error = "kwokctl unavailable: " + err.Error()
		fmt.Printf("   %s\n", res.Error)
		return res
	}
	res.Tool = kwokctlVersion(ctx, path) + ", binary runtime, hypershift components"
	dir := opts.tmp + "-k"
	k, err := newKwokctl(path, opts.bin, dir)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	var created []string
	defer func() {
		for _, name := range created {
			if err := k.delete(name); err != nil {
				fmt.Fprintf(os.Stderr, "   warning: %v\n", err)
			}
		}
		if n := killUnder(dir); n > 0 {
			fmt.Fprintf(os.Stderr, "   warning: killed %d kwokctl processes left under %s\n", n, dir)
		}
		_ = os.RemoveAll(dir)
	}()

	const runs = 3
	var totals, returns []float64
	for i := 1; i <= runs && ctx.Err() == nil; i++ {
		name := fmt.Sprintf("p%d", i)
		start := time.Now()
		created = append(created, name)
		if err := k.create(ctx, name); err != nil {
			res.Error = err.Error()
			break
		}
		returned := time.Since(start).Seconds()
		if err := waitKwokReady(ctx, k.kubeconfig(name), 2*time.Minute); err != nil {
			res.Error = err.Error()
			break
		}
		total := time.Since(start).Seconds()
		totals, returns = append(totals, total), append(returns, returned)
		fmt.Printf("   %s: kwokctl returned after %.2fs, /readyz ok after %.2fs\n", name, returned, total)
		if i < runs {
			if err := k.delete(name); err != nil {
				res.Error = err.Error()
				break
			}
			created = created[:len(created)-1]
		}
	}
	res.CreateS = distOf(totals)
	res.KwokctlReturnP50 = median(returns)
	if res.Error != "" || ctx.Err() != nil {
		fmt.Printf("   peer failed: %s\n", res.Error)
		return res
	}
	last := created[len(created)-1]
	fmt.Printf("   idling %s before measuring %s\n", opts.settle(), last)
	if err := sleep(ctx, opts.settle()); err != nil {
		res.Error = err.Error()
		return res
	}
	fps, err := measureFootprints(ctx, []string{k.clusterDir(last)}, opts.idleWindow())
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.RSS, res.IdleCPU = summarize(fps, opts.settle())
	fmt.Printf("   RSS %.0f MiB (anon %.0f, PSS %.0f) %s; idle CPU %.1f millicores\n",
		res.RSS.P50, res.RSS.AnonP50, res.RSS.PSSP50, formatComponents(res.RSS.ByComponentP50, "%.0f"), res.IdleCPU.P50)
	return res
}

// waitKwokReady polls the cluster's /readyz every 50 ms with its admin
// credentials.
func waitKwokReady(ctx context.Context, kubeconfig string, timeout time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load %s: %w", kubeconfig, err)
	}
	if err := requireLoopback(cfg.Host); err != nil {
		return err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	defer hc.CloseIdleConnections()
	hc.Timeout = time.Second
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if probeWith(ctx, hc, cfg.Host+"/readyz") {
			return nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("kwok cluster API (%s) not ready after %s", cfg.Host, timeout)
}
