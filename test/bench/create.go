package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	hypershiftv1alpha1 "hypershift.dev/api/v1alpha1"
	"hypershift.dev/internal/components"
)

// createResult is create_to_available_s: from the Create call to
// Available=True, over clusters created one after another, each destroyed
// after it is measured.
type createResult struct {
	status
	dist
	// Milestones are medians of the time from the Create call until the
	// bench first saw each step, to show where the time goes.
	Milestones createMilestones `json:"milestones_p50_s"`
	DestroyP50 float64          `json:"destroy_s_p50"`
}

type createMilestones struct {
	// HostedControlPlane exists: the operator made namespace, PKI and HCP.
	HostedControlPlane float64 `json:"hostedcontrolplane_created"`
	// Processes: etcd and kube-apiserver processes exist.
	Processes float64 `json:"etcd_and_apiserver_started"`
	// APIServerReady: the hosted /readyz answers 200 (probed by the bench).
	APIServerReady float64 `json:"apiserver_readyz_ok"`
	// Available: the HostedCluster's condition, the measured total.
	Available float64 `json:"hostedcluster_available"`
}

func runCreate(ctx context.Context, opts *options, p *plane) *createResult {
	n := opts.scaled(10, 3)
	res := &createResult{}
	var totals, destroys []float64
	var hcps, procs, readies []float64
	for i := 1; i <= n && ctx.Err() == nil; i++ {
		name := fmt.Sprintf("c%d", i)
		tr := &createTrace{plane: p, name: name, start: time.Now()}
		if err := p.create(ctx, name); err != nil {
			res.Error = err.Error()
			break
		}
		err := p.waitAvailable(ctx, name, 3*time.Minute, func() { tr.observe(ctx) })
		total := time.Since(tr.start).Seconds()
		if err != nil {
			res.Error = err.Error()
			break
		}
		totals = append(totals, total)
		hcps = appendSeen(hcps, tr.hcp)
		procs = appendSeen(procs, tr.procs)
		readies = appendSeen(readies, tr.ready)
		fmt.Printf("   %-4s Available after %.2fs (HostedControlPlane %.2fs, processes %.2fs, /readyz %.2fs)\n",
			name, total, tr.hcp.Seconds(), tr.procs.Seconds(), tr.ready.Seconds())

		destroyStart := time.Now()
		if err := p.destroy(ctx, name, 3*time.Minute); err != nil {
			res.Error = err.Error()
			break
		}
		destroys = append(destroys, time.Since(destroyStart).Seconds())
	}
	res.dist = distOf(totals)
	res.Milestones = createMilestones{
		HostedControlPlane: median(hcps),
		Processes:          median(procs),
		APIServerReady:     median(readies),
		Available:          res.P50,
	}
	res.DestroyP50 = median(destroys)
	return res
}

func appendSeen(xs []float64, d time.Duration) []float64 {
	if d > 0 {
		return append(xs, d.Seconds())
	}
	return xs
}

// createTrace records when the bench first saw each step of one create.
type createTrace struct {
	plane *plane
	name  string
	start time.Time

	hcp, procs, ready time.Duration
	apiPort           int
}

var insecureProbe = &http.Client{
	Timeout: time.Second,
	// Only whether the loopback /readyz answers matters here, as for the
	// product's own probe; the certificate is checked elsewhere.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
}

func (t *createTrace) observe(ctx context.Context) {
	since := time.Since(t.start)
	if t.hcp == 0 {
		hcp := &hypershiftv1alpha1.HostedControlPlane{}
		key := client.ObjectKey{Namespace: clusterNamespace + "-" + t.name, Name: t.name}
		if t.plane.client.Get(ctx, key, hcp) == nil {
			t.hcp = since
		}
	}
	if t.procs == 0 || t.apiPort == 0 {
		seen := map[string]bool{}
		for _, p := range findProcs(t.plane.clusterDir(t.name)) {
			seen[p.component] = true
			if p.component == components.KubeAPIServer && t.apiPort == 0 {
				t.apiPort = flagInt(p.cmdline, "--secure-port=")
			}
		}
		if t.procs == 0 && seen[components.Etcd] && seen[components.KubeAPIServer] {
			t.procs = since
		}
	}
	if t.apiPort != 0 && t.ready == 0 &&
		probeWith(ctx, insecureProbe, fmt.Sprintf("https://127.0.0.1:%d/readyz", t.apiPort)) {
		t.ready = since
	}
}

// flagInt reads --name=N from a command line, or 0.
func flagInt(cmdline, prefix string) int {
	for _, arg := range strings.Fields(cmdline) {
		if v, ok := strings.CutPrefix(arg, prefix); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
